"""Armatures from another file: a plain linked armature is refused by every operator and
left as it was; a library override is posed like a local armature, and its pins and keys
survive saving and reopening the overriding file."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import channels, drag, pin_errors, pins_state, world_point

from welman_ik.blender.rig.keyframes import action_fcurves, bone_fcurves

# Both feet and the left hand, pinned in the library file (in the order the pin operator
# adds them: the armature's bone order).
LIBRARY_PINS = ("hand.L", "toe.L", "heel.02.L", "toe.R", "heel.02.R")
COLLECTION = "Rig"
REFUSED = "is linked from library"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A library .blend: the basic human metarig with pins, in collection 'Rig'."""
    path = tmp_path_factory.mktemp("library") / "rig_library.blend"
    scenes.empty_scene()
    obj = scenes.basic_human(pins=LIBRARY_PINS)
    assert [p.bone for p in obj.welman_ik.pins] == list(LIBRARY_PINS)
    bpy.ops.object.mode_set(mode="OBJECT")
    collection = bpy.data.collections.new(COLLECTION)
    bpy.context.scene.collection.children.link(collection)
    for owner in list(obj.users_collection):
        owner.objects.unlink(obj)
    collection.objects.link(obj)
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    return path


def _link(path, instance: bool):
    """A fresh file with collection 'Rig' linked from ``path``: instanced by an empty (as
    File > Link does by default) or put straight into the scene. Returns (collection,
    instancing empty or None)."""
    scenes.empty_scene()
    with bpy.data.libraries.load(str(path), link=True) as (_, into):
        into.collections = [COLLECTION]
    collection = into.collections[0]
    assert collection.library is not None
    scene = bpy.context.scene
    if not instance:
        scene.collection.children.link(collection)
        return collection, None
    empty = bpy.data.objects.new(COLLECTION, None)
    empty.instance_type = "COLLECTION"
    empty.instance_collection = collection
    scene.collection.objects.link(empty)
    return collection, empty


def _armature(pred) -> bpy.types.Object:
    found = [o for o in bpy.data.objects if o.type == "ARMATURE" and pred(o)]
    assert len(found) == 1, found
    return found[0]


def _activate(obj, mode: str = "POSE") -> None:
    view_layer = bpy.context.view_layer
    for other in view_layer.objects:
        other.select_set(False)
    view_layer.objects.active = obj
    obj.select_set(True)
    if obj.mode != mode:
        bpy.ops.object.mode_set(mode=mode)


def _override(path, how: str) -> bpy.types.Object:
    """Link the rig and make a library override of it, ``how``: with the operator (what
    Object > Library Override > Make does) or ``ID.override_hierarchy_create``."""
    collection, empty = _link(path, instance=True)
    if how == "operator":
        _activate(empty, "OBJECT")
        assert bpy.ops.object.make_override_library() == {"FINISHED"}
    else:
        scene, view_layer = bpy.context.scene, bpy.context.view_layer
        assert collection.override_hierarchy_create(scene, view_layer, reference=empty, do_fully_editable=True)
    obj = _armature(lambda o: o.override_library is not None)
    assert obj.library is None and obj.override_library.reference.library is not None
    # The armature data stays linked: posing never writes to it, so that is no reason to refuse.
    assert obj.data.library is not None
    _activate(obj)
    assert [p.bone for p in obj.welman_ik.pins] == list(LIBRARY_PINS)
    return obj


def _keyed(obj, bone: str, frame: int) -> bool:
    return any(abs(k.co[0] - frame) < 1e-9 for fc in bone_fcurves(obj, bone) for k in fc.keyframe_points)


def _state(obj) -> tuple:
    keys = [(fc.data_path, fc.array_index, tuple(tuple(k.co) for k in fc.keyframe_points)) for fc in action_fcurves(obj)]
    locks = [(pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z) for pb in obj.pose.bones]
    settings = obj.welman_ik
    return (channels(obj), pins_state(obj), locks, keys, obj.animation_data is not None, len(bpy.data.actions),
            settings.active_pin_index, settings.last_solve.iterations, bpy.context.scene.frame_current)


def _not_overridable(struct, path: str) -> list:
    found = []
    for prop in struct.properties:
        if prop.identifier in {"rna_type", "name"}:
            continue
        where = f"{path}.{prop.identifier}"
        if not prop.is_overridable:
            found.append(where)
        if prop.type in {"POINTER", "COLLECTION"} and prop.fixed_type.identifier.startswith("WELMAN_IK"):
            found += _not_overridable(prop.fixed_type, where)
    return found


def test_every_stored_property_is_overridable():
    """Whatever is added to the settings, pins or bone settings later must be overridable too,
    or an override silently drops it on save."""
    scenes.load_addon()
    found = []
    for owner in (bpy.types.Object, bpy.types.PoseBone):
        for prop in owner.bl_rna.properties:
            if prop.identifier.startswith("welman_ik"):
                found += [] if prop.is_overridable else [f"{owner.__name__}.{prop.identifier}"]
                if prop.type in {"POINTER", "COLLECTION"}:
                    found += _not_overridable(prop.fixed_type, f"{owner.__name__}.{prop.identifier}")
    assert found == []


# -- a plain linked armature ----------------------------------------------------------------


def test_linked_armature_is_refused_by_every_operator(library):
    _link(library, instance=False)
    obj = _armature(lambda o: o.library is not None)
    assert not getattr(obj, "is_editable", False)
    bpy.context.view_layer.objects.active = obj
    assert bpy.context.object == obj
    scenes.select(obj, ("hand.R", "foot.R"))
    before = _state(obj)
    target = tuple(world_point(obj, "hand.R") + np.array([-0.05, -0.05, 0.05]))
    calls = {
        "pin": lambda: bpy.ops.welman_ik.pin(),
        "unpin": lambda: bpy.ops.welman_ik.unpin(),
        "clear_pins": lambda: bpy.ops.welman_ik.clear_pins(),
        "remove_pin": lambda: bpy.ops.welman_ik.remove_pin(index=0),
        "lock": lambda: bpy.ops.welman_ik.lock(),
        "unlock": lambda: bpy.ops.welman_ik.unlock(),
        "drag": lambda: drag("hand.R", target),
        "bake": lambda: bpy.ops.welman_ik.bake(frame_start=1, frame_end=3),
        "detect_contacts": lambda: bpy.ops.welman_ik.detect_contacts(),
        "edit_motion": lambda: bpy.ops.welman_ik.edit_motion(bone="hand.R", target=target, frame=1),
        "retarget": lambda: bpy.ops.welman_ik.retarget(source="clip"),
        "retarget_map_fill": lambda: bpy.ops.welman_ik.retarget_map_fill(source="clip"),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError) as error:
            call()
        message = str(error.value)
        assert f"Armature '{obj.name}' {REFUSED} 'rig_library.blend'" in message, (name, message)
        assert "make a library override first" in message, (name, message)
        assert _state(obj) == before, name
    assert obj.animation_data is None


# -- a library override ---------------------------------------------------------------------


@pytest.mark.parametrize("how", ["operator", "hierarchy"])
def test_override_is_posed_like_a_local_armature(library, how):
    obj = _override(library, how)
    settings = obj.welman_ik
    # Pin and unpin a bone of the override's own.
    scenes.select(obj, ("hand.R",))
    assert bpy.ops.welman_ik.pin() == {"FINISHED"}
    assert [p.bone for p in settings.pins] == [*LIBRARY_PINS, "hand.R"]
    assert np.allclose(settings.pins[-1].location, world_point(obj, "hand.R"))
    assert bpy.ops.welman_ik.unpin() == {"FINISHED"}
    assert [p.bone for p in settings.pins] == list(LIBRARY_PINS)
    # Lock and unlock.
    scenes.select(obj, ("spine.003",))
    assert bpy.ops.welman_ik.lock() == {"FINISHED"}
    pb = obj.pose.bones["spine.003"]
    assert pb.lock_ik_x and pb.lock_ik_y and pb.lock_ik_z
    assert bpy.ops.welman_ik.unlock() == {"FINISHED"}
    assert not (pb.lock_ik_x or pb.lock_ik_y or pb.lock_ik_z)
    scenes.select(obj, ())
    # A scripted drag, with the library's pins held, keyed at this frame.
    bpy.context.scene.frame_current = 4
    target = world_point(obj, "hand.R") + np.array([-0.1, -0.15, 0.05])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 1e-4
    errors = pin_errors(obj)
    assert set(errors) == set(LIBRARY_PINS) and max(errors.values()) <= 1e-4
    assert settings.last_solve.converged and settings.last_solve.iterations > 0
    assert _keyed(obj, "hand.R", 4) and _keyed(obj, "forearm.R", 4)
    # Clear: a pin added in the override goes; the library's own cannot (Blender keeps the
    # reference's items in an override's collection), so they are disabled.
    scenes.select(obj, ("hand.R",))
    assert bpy.ops.welman_ik.pin() == {"FINISHED"}
    assert bpy.ops.welman_ik.clear_pins() == {"FINISHED"}
    assert [(p.bone, p.enabled) for p in settings.pins] == [(name, False) for name in LIBRARY_PINS]
    assert pin_errors(obj) == {}


def test_override_library_pins_are_disabled_not_removed(library):
    obj = _override(library, "operator")
    settings = obj.welman_ik
    scenes.select(obj, ("hand.L",))
    assert bpy.ops.welman_ik.unpin() == {"FINISHED"}
    assert len(settings.pins) == len(LIBRARY_PINS)
    assert [p.bone for p in settings.pins if not p.enabled] == ["hand.L"]
    # Pinning it again brings back the library's pin (the existing one is replaced).
    assert bpy.ops.welman_ik.pin() == {"FINISHED"}
    assert len(settings.pins) == len(LIBRARY_PINS) and all(p.enabled for p in settings.pins)
    # remove_pin: a library pin is disabled, a pin of the override's own is removed.
    scenes.select(obj, ("hand.R",))
    assert bpy.ops.welman_ik.pin() == {"FINISHED"}
    assert bpy.ops.welman_ik.remove_pin(index=0) == {"FINISHED"}
    assert len(settings.pins) == len(LIBRARY_PINS) + 1 and not settings.pins[0].enabled
    assert bpy.ops.welman_ik.remove_pin(index=len(LIBRARY_PINS)) == {"FINISHED"}
    assert [p.bone for p in settings.pins] == list(LIBRARY_PINS)
    # A disabled library pin is not held by a drag: the right hand pulled 1 m forward and 40 cm
    # down, beyond the arm's reach alone, bends the trunk, which carries the left hand 1 cm
    # and more from its pin's place (measured 60 cm), while the enabled pins hold.
    disabled = settings.pins[0]
    assert disabled.bone == "hand.L" and not disabled.enabled
    target = world_point(obj, "hand.R") + np.array([0.0, -1.0, -0.4])
    assert drag("hand.R", target) == {"FINISHED"}
    errors = pin_errors(obj)
    assert set(errors) == set(LIBRARY_PINS) - {"hand.L"}
    assert max(errors.values()) <= 1e-4
    moved = np.linalg.norm(world_point(obj, "hand.L", disabled.anchor) - np.array(disabled.location))
    assert moved > 0.01, moved


@pytest.mark.parametrize("how", ["operator", "hierarchy"])
def test_override_pins_and_keys_survive_save_and_reload(library, tmp_path, how):
    obj = _override(library, how)
    settings = obj.welman_ik
    settings.solver = "CCD"
    settings.pins[3].weight = 2.5  # a library pin changed in the override
    scenes.select(obj, ("heel.02.L",))
    assert bpy.ops.welman_ik.unpin() == {"FINISHED"}  # a library pin disabled
    for name in ("hand.R", "forearm.L", "shin.R"):  # pins of the override's own, in order
        scenes.select(obj, (name,))
        assert bpy.ops.welman_ik.pin(anchor=0.5) == {"FINISHED"}
    scenes.select(obj, ("forearm.L",))
    assert bpy.ops.welman_ik.unpin() == {"FINISHED"}  # and one of those removed again
    scenes.select(obj, ())
    settings.solver = "SR_INVERSE"
    bpy.context.scene.frame_current = 3
    target = world_point(obj, "hand.L") + np.array([0.05, -0.1, 0.05])
    assert drag("hand.L", target) == {"FINISHED"}
    assert max(pin_errors(obj).values()) <= 1e-4
    assert _keyed(obj, "hand.L", 3)
    settings.solver = "CCD"
    pins, pose, keys = pins_state(obj), channels(obj), _state(obj)[3]
    assert [p[0] for p in pins] == [*LIBRARY_PINS, "hand.R", "shin.R"]
    path = tmp_path / "shot.blend"

    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    scenes.empty_scene()
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}

    obj = _armature(lambda o: o.override_library is not None)
    assert pins_state(obj) == pins
    assert obj.welman_ik.solver == "CCD"
    assert channels(obj) == pose
    assert _state(obj)[3] == keys
    # It still works: a drag holds the enabled pins, old and new.
    _activate(obj)
    obj.welman_ik.solver = "SR_INVERSE"
    target = world_point(obj, "hand.L") + np.array([0.0, -0.05, -0.05])
    assert drag("hand.L", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.L") - target) <= 1e-4
    errors = pin_errors(obj)
    assert set(errors) == (set(LIBRARY_PINS) - {"heel.02.L"}) | {"hand.R", "shin.R"}
    assert max(errors.values()) <= 1e-4
