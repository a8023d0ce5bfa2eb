"""The first ten minutes in the window, as a new user meets them: the sidebar's Pin keeps the
feet flat through a reach past the arm's length and back, the Last Solve panel shows what
applies to the last operation, the Retarget section offers only other armatures and says why
its buttons are greyed out, and the words of the contact speed, a pin's frames and Pin As.
(The real window, the Drag button's start and the screenshots: ``tests/e2e``'s button mode.)"""

from __future__ import annotations

import math
import types

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip
from test_panel_words import _drawn

from welman_ik.blender.drag.session import DragSession
from welman_ik.blender.pins import operators as pin_operators
from welman_ik.blender.rig import properties
from welman_ik.blender.rig import retarget_map as retarget_map_module
from welman_ik.blender.ui import panel, retarget_panel

ARM = ("upper_arm.R", "forearm.R", "hand.R")
FOOT_POINTS = [(f"{bone}{side}", anchor) for side in (".L", ".R") for bone, anchor in (("foot", 0.0), ("toe", 1.0))]
LEGS = ("thigh", "shin", "foot", "toe")


def _point(obj, bone: str, anchor: float) -> np.ndarray:
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ pb.head.lerp(pb.tail, anchor))


def _turn(obj, bone: str):
    return (obj.matrix_world @ obj.pose.bones[bone].matrix).to_quaternion()


def _degrees(a, b) -> float:
    return math.degrees(2.0 * math.acos(min(1.0, abs(a.dot(b)))))


def _sidebar_pin(obj, bones) -> None:
    """The sidebar's Pin button on ``bones``: the operator with the kind the panel gives it."""
    log: list = []
    layout = _Recorder(log)
    panel.WELMAN_IK_PT_pins.draw(types.SimpleNamespace(layout=layout, draw_offer=lambda *a: None), bpy.context)
    (pin_button,) = [props for idname, props in log if idname == "welman_ik.pin"]
    scenes.select(obj, bones)
    with scenes.quiet():
        assert bpy.ops.welman_ik.pin(**vars(pin_button)) == {"FINISHED"}
    scenes.select(obj, [])


class _Recorder:
    """A UILayout stand-in that keeps each operator button's properties as the panel set them."""

    def __init__(self, log: list):
        self.log = log

    def __getattr__(self, name):
        return lambda *args, **kwargs: _Recorder(self.log)

    def operator(self, idname, **kwargs):
        props = types.SimpleNamespace()
        self.log.append((idname, props))
        return props


@pytest.mark.parametrize("ranges", [False, True])
def test_the_readme_recipe_keeps_the_feet_planted(bare_human, ranges):
    """Both feet pinned by the sidebar's Pin, the right hand dragged in 1 cm steps 40 cm past
    the arm's reach, up and out, and back a fifth of the way: no foot turns more than 1 degree, no heel or toe
    goes below where it stood, the trunk stays within 30 degrees of upright, and confirming
    keys no bone of the legs (they came back where they were). Before: Pin held the toe
    only, and a foot turned 50 degrees about it, its heel 117 mm off and below the floor."""
    obj = bare_human
    _sidebar_pin(obj, ["foot.L", "foot.R"])
    assert {p.kind for p in obj.welman_ik.pins} == {"POSE"}
    if ranges:  # the panel's offer accepted
        with scenes.quiet():
            bpy.ops.welman_ik.joint_ranges(preset="AUTO", every_bone=True)
    bpy.context.view_layer.update()
    obj.animation_data_create()
    feet = {b: _turn(obj, b) for b in ("foot.L", "foot.R")}
    floor = {p: _point(obj, *p)[2] for p in FOOT_POINTS}
    shoulder = _point(obj, "upper_arm.R", 0.0)
    reach = sum(obj.pose.bones[b].bone.length for b in ARM)
    start = _point(obj, "hand.R", 1.0)
    target = shoulder + (reach + 0.4) * np.array([-math.sqrt(0.5), 0.0, math.sqrt(0.5)])
    steps = int(np.linalg.norm(target - start) / 0.01)
    drag = DragSession(obj, "hand.R", 1.0)
    worst_turn = worst_dip = worst_lean = 0.0
    for t in [*np.linspace(0.0, 1.0, steps + 1)[1:], *np.linspace(1.0, 0.2, steps + 1)[1:]]:
        goal = start + t * (target - start)
        drag.move(np.array([goal[0], -10.0, goal[2]]), np.array([0.0, 1.0, 0.0]))
        bpy.context.view_layer.update()
        worst_turn = max(worst_turn, *(_degrees(q, _turn(obj, b)) for b, q in feet.items()))
        worst_dip = min(worst_dip, *(_point(obj, *p)[2] - floor[p] for p in FOOT_POINTS))
        trunk = _point(obj, "spine.004", 0.0) - _point(obj, "spine", 0.0)
        worst_lean = max(worst_lean, math.degrees(math.acos(trunk[2] / np.linalg.norm(trunk))))
    keyed = drag.confirm(bpy.context)
    assert worst_turn <= 1.0
    assert worst_dip >= -1e-4
    assert worst_lean <= 30.0
    assert worst_lean >= 5.0  # (the reach was past the arm: the trunk did join)
    assert "forearm.R" in keyed
    assert [b for b in keyed if b.split(".")[0] in LEGS] == []


def test_pin_and_pin_as_say_what_they_pin():
    """The sidebar's Pin holds the whole bone and says so; Pin As is a menu with its own
    tooltip naming the kinds, each item with its kind's words."""
    assert panel.WELMAN_IK_MT_pin_as.__doc__ != pin_operators.WELMAN_IK_OT_pin.__doc__
    tip = " ".join(panel.WELMAN_IK_MT_pin_as.__doc__.split())
    assert all(word in tip for word in ("point", "turn", "line", "plane", "aim", "region", "together", "balance"))
    describe = pin_operators.WELMAN_IK_OT_pin.description
    assert "keeps its turn" in describe(bpy.context, types.SimpleNamespace(kind="POSE"))
    for kind, _name, words, *_ in properties.PIN_KINDS:
        if kind != "POSE":
            assert words[1:] in describe(bpy.context, types.SimpleNamespace(kind=kind))


def _last_solve_labels(obj) -> list[str]:
    return [text for kind, text in _drawn(panel.WELMAN_IK_PT_last_solve) if kind == "label"]


def test_last_solve_shows_what_applies_to_the_last_operation(human):
    """A drag shows its iterations and its drag error; a bake neither (no drag); both their
    pins' error and time in units a person reads."""
    obj = human
    with scenes.quiet():
        assert bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(_point(obj, "hand.R", 1.0) + [0.0, -0.1, 0.1]))
    labels = _last_solve_labels(obj)
    assert labels[0] == "Drag" and any(t.startswith("Drag error:") for t in labels)
    assert any(t.startswith("Iterations:") for t in labels)
    obj.pose.bones["hand.R"].keyframe_insert("location", frame=1)
    obj.pose.bones["hand.R"].keyframe_insert("location", frame=3)
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=3) == {"FINISHED"}
    assert obj.welman_ik.last_solve.operation == "BAKE"
    labels = _last_solve_labels(obj)
    assert labels[0] == "Bake" and any(t.startswith("Largest pin error:") for t in labels)
    assert not any(t.startswith(("Drag error", "Iterations")) for t in labels)
    assert "e-" not in " ".join(labels)  # (no 0.00000020... figures)


def test_the_retarget_section_offers_other_armatures_and_says_why(bare_human):
    """The Source field lists armatures other than this one only; Fill Map and Retarget are
    greyed out from the sidebar until a source is chosen (Retarget: an animated one), each
    saying why; after a retarget, Last Solve shows the plants' miss and no drag error, and
    each figure of the section is whole."""
    target = bare_human
    bpy.ops.object.mode_set(mode="OBJECT")
    source = import_clip("mocapbank_clip.bvh")
    bpy.ops.object.mode_set(mode="OBJECT")
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    bpy.context.scene.collection.objects.link(camera)
    bpy.context.view_layer.objects.active = target
    offered = [obj for obj in bpy.data.objects if properties.other_armature(target.welman_ik, obj)]
    assert offered == [source]

    sidebar = types.SimpleNamespace(object=target, region=types.SimpleNamespace(type="UI"))
    fill = retarget_map_module.WELMAN_IK_OT_retarget_map_fill
    retarget = bpy.types.WELMAN_IK_OT_retarget
    assert not fill.poll(sidebar) and not retarget.poll(sidebar)
    assert "Choose the Source" in fill.sidebar_refusal(sidebar)
    assert "Choose the Source" in retarget.sidebar_refusal(sidebar)
    target.welman_ik.retarget_source = source
    assert fill.poll(sidebar) and retarget.poll(sidebar)
    action = source.animation_data.action
    source.animation_data.action = None
    assert fill.poll(sidebar) and not retarget.poll(sidebar)
    assert "has no action" in retarget.sidebar_refusal(sidebar)
    source.animation_data.action = action

    with scenes.quiet():
        assert bpy.ops.welman_ik.retarget(frame_start=1, frame_end=3) == {"FINISHED"}
    labels = _last_solve_labels(target)
    assert labels[0] == "Retarget" and any(t.startswith("Plants' largest miss:") for t in labels)
    assert not any(t.startswith(("Drag error", "Iterations")) for t in labels)
    drawn = _drawn(retarget_panel.WELMAN_IK_PT_retarget)
    figures = [text for kind, text in drawn if kind == "label" and ":" in text and text != "Source:"]
    assert figures and max(len(text) for text in figures) <= 30  # "Orientations: 4.2°", the bone below


def test_words_for_animators(human):
    """The contact speed is a speed with a floor above 0; a pin with Start and End 0 reads
    "always", one with a range its frames."""
    rna = properties.WELMAN_IK_Settings.bl_rna.properties["contact_speed"]
    assert rna.unit == "VELOCITY" and rna.hard_min >= 0.0099
    obj = human
    obj.welman_ik.active_pin_index = 0
    labels = [text for kind, text in _drawn(panel.WELMAN_IK_PT_bake) if kind == "label"]
    assert any(text.endswith(": always") for text in labels)
    obj.welman_ik.pins[0].frame_start, obj.welman_ik.pins[0].frame_end = 1, 40
    labels = [text for kind, text in _drawn(panel.WELMAN_IK_PT_bake) if kind == "label"]
    assert any(text.endswith(": 1\u201340") for text in labels)


def test_the_hips_go_where_they_are_dragged_balanced_or_not(bare_human):
    """The standing balance keeps the body from tipping while a limb is dragged; the hips
    dragged 30 cm forward, past the toes, go there (a lunge, a fall: the user's call), and a
    hand dragged past its reach, up and out, leaves the pelvis over the feet."""
    obj = bare_human
    _sidebar_pin(obj, ["foot.L", "foot.R"])
    hips = _point(obj, "spine", 0.0)
    with scenes.quiet():
        assert bpy.ops.welman_ik.drag(bone="spine", anchor=0.0, target=tuple(hips + [0.0, -0.3, -0.05])) == {"FINISHED"}
    assert np.linalg.norm(_point(obj, "spine", 0.0) - (hips + [0.0, -0.3, -0.05])) <= 1e-4
    assert obj.welman_ik.last_solve.converged
    with scenes.quiet():
        bpy.ops.pose.select_all(action="SELECT")
        bpy.ops.pose.transforms_clear()
    bpy.context.view_layer.update()
    far = _point(obj, "upper_arm.R", 0.0) + np.array([-0.75, 0.0, 0.75])  # 0.43 m past the arm, up and out
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(far))
    moved = _point(obj, "spine", 0.0) - hips
    assert np.linalg.norm(moved[:2]) <= 0.05  # (2.3 cm; the pelvis slid 39 cm without the balance)
