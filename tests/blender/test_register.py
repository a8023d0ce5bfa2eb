"""Registering, unregistering and registering again; the core never pulls in bpy."""

from __future__ import annotations

import subprocess
import sys

import bpy
import numpy as np
import scenes
from conftest import ROOT, drag, pin_errors, world_point

import welman_ik

OPERATORS = ["bake", "clear_pins", "detect_contacts", "dismiss_ranges_offer", "drag", "edit_motion", "joint_ranges",
             "jump_to_frame", "lock", "pin", "pin_to", "remove_pin", "retarget", "retarget_map_fill", "unlock", "unpin"]


def _operators() -> list:
    return sorted(name for name in dir(bpy.ops.welman_ik) if not name.startswith("_"))


def _registered() -> bool:
    return hasattr(bpy.types.Object, "welman_ik") and hasattr(bpy.types, "WELMAN_IK_OT_drag")


def test_register_twice(human):
    try:
        welman_ik.register()
        welman_ik.register()
        assert _registered()
        assert _operators() == OPERATORS
        assert len(human.welman_ik.pins) == 5  # the pins stored on the object are still there
    finally:
        welman_ik.register()


def test_unregister_register_ten_times(human):
    human.welman_ik.tolerance = 2e-5
    try:
        for _ in range(10):
            welman_ik.unregister()
            assert not _registered()
            assert _operators() == []
            welman_ik.register()
            assert _registered()
        assert _operators() == OPERATORS
        assert bpy.ops.welman_ik.drag.poll()
    finally:
        welman_ik.register()
    settings = human.welman_ik
    assert settings.tolerance == np.float32(2e-5)  # stored settings survive re-registration
    assert len(settings.pins) == 5
    settings.solver = "SR_INVERSE"
    settings.max_iterations = 80
    assert settings.max_iterations == 80
    target = world_point(human, "hand.R") + np.array([-0.05, -0.05, 0.05])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4
    assert settings.last_solve.iterations >= 1


def test_registered_on_a_fresh_scene_after_re_registration():
    """The next test's scene setup finds exactly one working registration."""
    welman_ik.register()
    scenes.empty_scene()
    obj = scenes.basic_human(pins=("toe.L",))
    assert _operators() == OPERATORS
    assert len(obj.welman_ik.pins) == 1


def _modules_after(statement: str) -> set:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"{statement}\n"
        "print(' '.join(m for m in ('bpy', 'welman_ik.core', 'welman_ik.blender') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return set(out.stdout.split())


def test_core_seam():
    assert _modules_after("import welman_ik.core") == {"welman_ik.core"}


def test_core_seam_detects_bpy():
    """The check above can see bpy: the Blender layer does pull it in."""
    assert "bpy" in _modules_after("import welman_ik.blender")


def _drag_keymap_items() -> int:
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    return sum(
        1 for keymap in keyconfig.keymaps for item in keymap.keymap_items if item.idname == "welman_ik.drag"
    )


def test_register_cycles_leave_one_keymap_item_and_draw_handler():
    from welman_ik.blender.ui import overlay

    for _ in range(10):
        welman_ik.unregister()
        assert overlay._handle is None
        assert _drag_keymap_items() == 0
        welman_ik.register()
    assert _drag_keymap_items() == 1
    assert overlay._handle is not None
    welman_ik.register()  # registering again re-registers, nothing doubles
    assert _drag_keymap_items() == 1
