"""The joint range in the interface: the overlay's geometry (``range_shapes``: swing cone,
twist arc) measured on real posed bones, and the Joint Range panel, the offer of human ranges
and its dismissal."""

from __future__ import annotations

import math
import sys
import types

import bpy
import numpy as np
import pytest
import scenes
from mathutils import Euler, Matrix, Quaternion

import welman_ik.blender.rig
from welman_ik.blender.ui import panel, range_shapes

BONE = "upper_arm.L"
LIMITS = {"swing_x_min": -0.5, "swing_x_max": 1.1, "swing_z_min": -0.3, "swing_z_max": 0.6,
          "twist_min": -0.9, "twist_max": 0.4, "roll": 0.7}
SEGMENTS = 32  # boundary point k is at angle 2 pi k / 32 round the ellipse: 0 +X, 8 +Z, 16 -X, 24 -Z


@pytest.fixture
def arm(bare_human):
    """The metarig's left upper arm, its range in use with ``LIMITS``; (armature, pose bone)."""
    pb = bare_human.pose.bones[BONE]
    pb.rotation_mode = "QUATERNION"
    rng = pb.welman_ik_range
    rng.use = True
    for name, value in LIMITS.items():
        setattr(rng, name, value)
    return bare_human, pb


def range_rotation(pb, rotation: Matrix) -> None:
    """Pose ``pb`` so that its rotation in the range frame is ``rotation`` (R = B R' B^T)."""
    roll = Matrix.Rotation(pb.welman_ik_range.roll, 3, "Y")
    pb.rotation_quaternion = (roll @ rotation @ roll.transposed()).to_quaternion()
    bpy.context.view_layer.update()


def swing(axis: str, angle: float) -> Matrix:
    return Matrix.Rotation(angle, 3, axis)


def limit(name: str) -> float:
    """The stored (single-precision) value of range field ``name``."""
    return float(np.float32(LIMITS[name]))


def outline(obj, pb) -> dict:
    bpy.context.view_layer.update()
    return range_shapes.range_outline(obj, pb, segments=SEGMENTS)


@pytest.mark.parametrize(("axis", "name", "index"), [
    ("X", "swing_x_max", 0), ("X", "swing_x_min", 16), ("Z", "swing_z_max", 8), ("Z", "swing_z_min", 24),
])
def test_bone_at_swing_limit_lies_on_the_rim(arm, axis, name, index):
    """Swung exactly to a limit (with a roll of 0.7 rad), the bone's tail is the cone's rim point
    on that semi-axis, within 1e-5 m, and it counts as inside; a little further is outside."""
    obj, pb = arm
    range_rotation(pb, swing(axis, limit(name)))
    shape = outline(obj, pb)
    tail = shape["direction"][1]
    assert np.linalg.norm(shape["rim"][index] - tail) <= 1e-5
    assert np.min(np.linalg.norm(shape["rim"] - tail, axis=1)) <= 1e-5
    assert np.isclose(np.linalg.norm(shape["rim"] - shape["head"], axis=1), shape["length"]).all()
    assert shape["inside"]
    assert abs(shape["twist"]) <= 1e-5
    assert abs(range_shapes.swing_measure(pb.welman_ik_range, *shape["swing"]) - 1.0) <= 1e-5

    range_rotation(pb, swing(axis, limit(name) * 1.03))
    beyond = outline(obj, pb)
    assert not beyond["swing_inside"] and not beyond["inside"]
    range_rotation(pb, swing(axis, limit(name) * 0.97))
    assert outline(obj, pb)["inside"]


def test_rim_follows_the_ellipse_between_the_axes(arm):
    """A swing vector on the elliptic boundary in a quadrant (here +X -Z, at 45 degrees round it)
    puts the tail on the rim point drawn for it."""
    obj, pb = arm
    phi = 2.0 * math.pi * 28 / SEGMENTS
    s = np.array([limit("swing_x_max") * math.cos(phi), 0.0, -limit("swing_z_min") * math.sin(phi)])
    rotation = Quaternion(s / np.linalg.norm(s), float(np.linalg.norm(s))).to_matrix()
    range_rotation(pb, rotation)
    shape = outline(obj, pb)
    assert np.linalg.norm(shape["rim"][28] - shape["direction"][1]) <= 1e-5
    assert shape["swing_inside"]


SWUNG = Quaternion((0.4 / math.hypot(0.4, 0.2), 0.0, -0.2 / math.hypot(0.4, 0.2)), math.hypot(0.4, 0.2)).to_matrix()


@pytest.mark.parametrize(("name", "end"), [("twist_min", 0), ("twist_max", -1)])
def test_twist_arc_ends_at_the_twist_limits(arm, name, end):
    """Swung and twisted exactly to a twist limit, the tick for the current twist points at that
    end of the arc; the arc spans twist_max - twist_min about the bone's posed Y axis."""
    obj, pb = arm
    twist = limit(name)
    range_rotation(pb, SWUNG @ Matrix.Rotation(twist, 3, "Y"))
    shape = outline(obj, pb)
    assert abs(shape["twist"] - twist) <= 1e-5
    assert shape["inside"]
    centre, tip = shape["twist_tick"]
    arc = shape["twist_arc"]

    def along(p):
        return (p - centre) / np.linalg.norm(p - centre)

    assert np.linalg.norm(along(arc[end]) - along(tip)) <= 1e-5
    # The arc lies about the posed bone's Y axis, centred on it.
    y = shape["direction"][1] - shape["direction"][0]
    y /= np.linalg.norm(y)
    assert np.linalg.norm(np.cross(centre - shape["head"], y)) <= 1e-6
    assert np.abs((arc - centre) @ y).max() <= 1e-6
    # Signed span from twist_min to twist_max, about Y (a positive twist turns X towards -Z).
    zero = along(shape["twist_zero"][1])
    angles = [math.atan2(float(np.dot(np.cross(zero, along(p)), y)), float(np.dot(zero, along(p)))) for p in arc]
    assert abs(angles[0] - limit("twist_min")) <= 1e-5
    assert abs(angles[-1] - limit("twist_max")) <= 1e-5

    range_rotation(pb, SWUNG @ Matrix.Rotation(twist + math.copysign(0.05, twist), 3, "Y"))
    beyond = outline(obj, pb)
    assert beyond["swing_inside"] and not beyond["twist_inside"] and not beyond["inside"]


def test_outline_follows_the_posed_parent_and_the_object(arm):
    """The range is measured from the rest orientation as the posed parent carries it: turning
    the parent (and the object) turns the whole outline with it, and a bone at its limit stays
    on the rim."""
    obj, pb = arm
    range_rotation(pb, swing("X", limit("swing_x_max")))
    before = outline(obj, pb)
    parent = pb.parent
    parent_before = (obj.matrix_world @ parent.matrix).to_3x3().normalized()
    parent.rotation_mode = "XYZ"
    parent.rotation_euler = Euler((0.3, -0.5, 0.8))
    obj.rotation_euler = Euler((0.0, 0.0, 0.6))
    obj.location = (0.4, -0.2, 0.1)
    after = outline(obj, pb)
    parent_after = (obj.matrix_world @ parent.matrix).to_3x3().normalized()
    turn = np.array(parent_after @ parent_before.inverted())
    assert not np.allclose(turn, np.eye(3), atol=1e-2)
    for key in ("rim", "twist_arc", "spokes"):
        expected = (before[key] - before["head"]) @ turn.T
        assert np.abs(after[key] - after["head"] - expected).max() <= 1e-5, key
    assert np.linalg.norm(after["rim"][0] - after["direction"][1]) <= 1e-5
    assert after["inside"]


def test_range_frame_is_the_rest_frame_turned_by_roll(arm):
    """At rest the range frame's Y is the bone's, its X the bone's X turned by roll about Y."""
    obj, pb = arm
    bpy.context.view_layer.update()
    frame = range_shapes.range_frame(obj, pb)
    bone = np.array((obj.matrix_world @ pb.matrix).to_3x3().normalized())
    roll = limit("roll")
    assert np.allclose(frame[:, 1], bone[:, 1], atol=1e-6)
    assert np.allclose(frame[:, 0], math.cos(roll) * bone[:, 0] - math.sin(roll) * bone[:, 2], atol=1e-6)
    assert np.allclose(frame.T @ frame, np.eye(3), atol=1e-6)


def test_overlay_draw_is_harmless_without_a_window(arm):
    """The draw handler's range part only reads the active bone; without a GPU context the
    handler is not run, but the lookup of the active bone is."""
    obj, pb = arm
    obj.data.bones.active = pb.bone
    assert range_shapes.active_range_bone(obj) == pb
    pb.welman_ik_range.use = False
    assert range_shapes.active_range_bone(obj) is None
    obj.data.bones.active = None
    assert range_shapes.active_range_bone(obj) is None


# --------------------------------------------------------------------------- panel


class Layout:
    """Records what a panel draws; checks every property it shows exists."""

    def __init__(self, calls: list, parent: Layout | None = None):
        self.calls = calls
        self.parent = parent
        self.active = True
        self.use_property_split = False

    def _child(self, *args, **kwargs):
        return Layout(self.calls, self)

    def shown_active(self) -> bool:
        return self.active and (self.parent is None or self.parent.shown_active())

    row = column = box = split = _child

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, name
        self.calls.append(("prop", name, self.shown_active()))

    def operator(self, idname, **kwargs):
        button = types.SimpleNamespace()
        self.calls.append(("operator", idname, kwargs.get("text"), button))
        return button

    def operator_menu_enum(self, idname, prop, **kwargs):
        self.calls.append(("operator_menu_enum", idname, prop))

    def menu(self, menu, **kwargs):
        assert hasattr(bpy.types, menu), menu
        self.calls.append(("menu", menu))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        assert name in data.bl_rna.properties, name
        self.calls.append(("prop", name, self.shown_active()))

    def label(self, text="", **kwargs):
        self.calls.append(("label", text))

    def separator(self, **kwargs):
        pass

    def template_list(self, *args, **kwargs):
        self.calls.append(("template_list",))


def draw(panel_class, method: str = "draw") -> list:
    calls: list = []
    fake = types.SimpleNamespace(layout=Layout(calls))
    fake.draw_offer = lambda context, naming, count: panel.WELMAN_IK_PT_pins.draw_offer(fake, context, naming, count)
    getattr(panel_class, method)(fake, bpy.context)
    return calls


def test_panel_classes_register():
    scenes.empty_scene()
    for name in ("WELMAN_IK_PT_range", "WELMAN_IK_PT_pins", "WELMAN_IK_OT_dismiss_ranges_offer"):
        assert hasattr(bpy.types, name), name
    assert bpy.types.WELMAN_IK_PT_range.bl_parent_id == "WELMAN_IK_PT_main"


def test_range_panel_poll(arm):
    obj, pb = arm
    poll = panel.WELMAN_IK_PT_range.poll
    obj.data.bones.active = pb.bone
    assert poll(bpy.context)
    obj.data.bones.active = None
    assert not poll(bpy.context)
    obj.data.bones.active = pb.bone
    bpy.ops.object.mode_set(mode="OBJECT")
    assert not poll(bpy.context)
    bpy.ops.object.mode_set(mode="POSE")
    assert poll(bpy.context)
    bpy.ops.object.mode_set(mode="OBJECT")
    mesh = bpy.data.objects.new("box", bpy.data.meshes.new("box"))
    bpy.context.scene.collection.objects.link(mesh)
    bpy.context.view_layer.objects.active = mesh
    assert not poll(bpy.context)


def test_range_panel_draws_the_active_bone_range(arm):
    obj, pb = arm
    obj.data.bones.active = pb.bone
    header = draw(panel.WELMAN_IK_PT_range, "draw_header")
    assert header == [("prop", "use", True)]
    calls = draw(panel.WELMAN_IK_PT_range)
    shown = [c[1] for c in calls if c[0] == "prop"]
    assert shown == ["swing_x_min", "swing_x_max", "swing_z_min", "swing_z_max", "twist_min", "twist_max", "roll"]
    assert all(c[2] for c in calls if c[0] == "prop")
    pb.welman_ik_range.use = False
    assert not any(c[2] for c in draw(panel.WELMAN_IK_PT_range) if c[0] == "prop")  # greyed


@pytest.fixture
def recognised(monkeypatch):
    """A stand-in presets module that recognises every rig as ``naming[0]``, with ranges for 20 bones."""
    naming = ["METARIG"]
    fake = types.ModuleType("welman_ik.blender.rig.presets")
    fake.recognised_ranges = lambda obj: (naming[0], 20 if naming[0] else 0)
    monkeypatch.setattr(welman_ik.blender.rig, "presets", fake, raising=False)
    monkeypatch.setitem(sys.modules, "welman_ik.blender.rig.presets", fake)
    return naming


def offer_lines(calls) -> str:
    return " ".join(c[1] for c in calls if c[0] == "label")


def test_offer_once_per_pinned_human_rig(human, recognised):
    """The Pins panel offers human ranges on a pinned, recognised rig with no range in use,
    until dismissed; the dismissal is stored on the rig."""
    assert panel.ranges_offer(human) == ("METARIG", 20)
    assert "Human rig recognised (Rigify metarig naming). Set natural joint ranges on its 20 human joints, the whole rig?" in offer_lines(
        draw(panel.WELMAN_IK_PT_pins))
    pb = human.pose.bones[BONE]
    pb.welman_ik_range.use = True
    assert panel.ranges_offer(human) == ("", 0)
    pb.welman_ik_range.use = False
    recognised[0] = ""
    assert panel.ranges_offer(human) == ("", 0)
    recognised[0] = "MIXAMO"
    assert panel.ranges_offer(human) == ("MIXAMO", 20)
    assert bpy.ops.welman_ik.dismiss_ranges_offer() == {"FINISHED"}
    assert human.welman_ik.ranges_offered
    assert panel.ranges_offer(human) == ("", 0)
    assert "recognised" not in offer_lines(draw(panel.WELMAN_IK_PT_pins))


def test_the_offer_does_what_it_says(human):
    """With the feet selected (as right after pinning them), the offer's button sets ranges on
    as many bones as its words say, the whole rig's, not the two selected."""
    scenes.select(human, ["foot.L", "foot.R"])
    naming, count = panel.ranges_offer(human)
    assert naming == "METARIG" and count > 10
    calls = draw(panel.WELMAN_IK_PT_pins)
    assert f"on its {count} human joints, the whole rig?" in offer_lines(calls)
    (button,) = [c for c in calls if c[0] == "operator" and c[1] == panel.JOINT_RANGES]
    assert button[2] == "Set Ranges"
    assert bpy.ops.welman_ik.joint_ranges(preset=button[3].preset, every_bone=button[3].every_bone) == {"FINISHED"}
    assert sum(pb.welman_ik_range.use for pb in human.pose.bones) == count
    assert panel.ranges_offer(human) == ("", 0)  # done: not offered again,
    assert bpy.ops.welman_ik.joint_ranges(preset="CLEAR") == {"FINISHED"}
    assert panel.ranges_offer(human) == ("", 0)  # not even once the ranges are cleared


def test_no_offer_without_pins(bare_human, recognised):
    assert panel.ranges_offer(bare_human) == ("", 0)


def test_offer_survives_missing_or_failing_presets(human, monkeypatch):
    """Without a presets module, or with one that fails, the panel draws and offers nothing."""
    broken = types.ModuleType("welman_ik.blender.rig.presets")
    monkeypatch.setattr(welman_ik.blender.rig, "presets", broken, raising=False)
    monkeypatch.setitem(sys.modules, "welman_ik.blender.rig.presets", broken)
    assert panel.ranges_offer(human) == ("", 0)

    def fail(obj):
        raise RuntimeError("a rig the presets choke on")

    broken.recognised_ranges = fail
    assert panel.ranges_offer(human) == ("", 0)
    assert "recognised" not in offer_lines(draw(panel.WELMAN_IK_PT_pins))


def test_overlay_decomposition_matches_the_solver():
    """The overlay splits rotations into swing and twist as the solver's ranges do."""
    from welman_ik.core import ranges
    rotations = [Quaternion(axis, angle).to_matrix() for axis, angle in [
        ((1.0, 0.0, 0.0), 0.7), ((0.3, 0.9, -0.2), 1.9), ((-0.5, 0.1, 0.8), 2.8), ((0.0, 1.0, 0.0), -1.2),
    ]]
    expected = ranges.swing_twist(np.array([np.array(r) for r in rotations]))
    for i, rotation in enumerate(rotations):
        assert np.allclose(range_shapes.swing_twist(np.array(rotation)), [float(e[i]) for e in expected], atol=1e-9)
