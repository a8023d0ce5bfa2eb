"""The floor pin (``kind='FLOOR'``): a point on or above a plane, free above it, held once it
would go below, in every solver; measured on the evaluated pose."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import world_point
from test_bake import _keys

FEET = [(bone, anchor) for bone in ("foot.L", "foot.R", "toe.L", "toe.R") for anchor in (0.0, 1.0)]


def floor_pins(obj) -> None:
    """Floor pins by the operator on the feet and toes (the world's floor, z = 0): one on each
    end of each bone (the operator pins both ends of a floor unless an anchor is given)."""
    scenes.select(obj, sorted({bone for bone, _ in FEET}))
    with scenes.quiet():
        assert bpy.ops.welman_ik.pin(kind="FLOOR") == {"FINISHED"}
    scenes.select(obj, [])
    assert sorted((p.bone, p.anchor) for p in obj.welman_ik.pins) == sorted(FEET)


def lowest(obj) -> float:
    return min(float(world_point(obj, bone, anchor)[2]) for bone, anchor in FEET)


@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_the_hips_dragged_down_never_push_a_foot_through_the_floor(bare_human, solver):
    """Floor pins on the heads and tails of the feet and toes, nothing else, the pelvis dragged
    80 cm down in 5 cm steps: no point of a foot goes below the floor by more than 0.1 mm (the
    legs fold on it; without the pins the whole body sinks through it)."""
    obj = bare_human
    obj.welman_ik.solver = solver
    floor_pins(obj)
    assert lowest(obj) >= -1e-6
    hips = world_point(obj, "spine", 0.0)
    for step in range(1, 17):  # 5 cm a step, as a mouse brings it
        with scenes.quiet():
            bpy.ops.welman_ik.drag(bone="spine", anchor=0.0, target=tuple(hips - [0.0, 0.0, 0.05 * step]))
        assert lowest(obj) >= -1e-4, step


def test_a_foot_dragged_into_the_floor_stops_on_it_and_says_so(bare_human):
    obj = bare_human
    floor_pins(obj)
    toe = world_point(obj, "toe.R", 1.0)
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="toe.R", target=tuple(toe - [0.0, 0.0, 0.2]))
    assert lowest(obj) >= -1e-4
    last = obj.welman_ik.last_solve
    assert not last.converged and last.drag_error >= 0.15  # stopped on the floor, 20 cm short
    assert "'toe.R' (dragged) is" in last.message and "pins held" in last.message


def test_a_floor_with_no_normal_is_refused(bare_human):
    obj = bare_human
    floor_pins(obj)
    obj.welman_ik.pins[0].direction = (0.0, 0.0, 0.0)
    before = world_point(obj, "hand.R")
    with pytest.raises(RuntimeError, match="direction of .* is zero"):
        bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(before + [0.0, 0.0, 0.1]))
    assert np.allclose(world_point(obj, "hand.R"), before)


def test_a_bake_keeps_the_feet_on_the_floor_through_every_frame(bare_human):
    """The pelvis keyed to sink 20 cm over ten frames (the feet with it, through the floor);
    floor pins on the feet, a bake: on every frame of the new action, no foot point below the
    floor by more than 0.1 mm; the original action keeps its sinking."""
    obj = bare_human
    spine = obj.pose.bones["spine"]
    spine.keyframe_insert("location", frame=1)
    spine.location = (0.0, -0.2, 0.0)  # (the pelvis bone's Y points up: 20 cm down)
    spine.keyframe_insert("location", frame=10)
    original = obj.animation_data.action
    original_keys = _keys(obj)
    bpy.context.scene.frame_set(10)
    assert lowest(obj) < -0.1  # the animation sinks the feet through the floor
    floor_pins(obj)
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    assert obj.animation_data.action is not original
    worst = []
    for frame in range(1, 11):
        bpy.context.scene.frame_set(frame)
        worst.append(lowest(obj))
    assert min(worst) >= -1e-4, worst
    obj.animation_data.action = original
    assert _keys(obj) == original_keys  # the original action keeps its sinking, key for key


def test_a_floor_pin_at_one_anchor_keeps_the_other_ends(bare_human):
    """A floor pinned at one anchor adds that point's pin beside the other end's; pinned again
    at the same anchor it replaces it."""
    obj = bare_human
    scenes.select(obj, ["foot.L"])
    with scenes.quiet():
        for anchor in (0.0, 1.0, 1.0):
            assert bpy.ops.welman_ik.pin(kind="FLOOR", anchor=anchor) == {"FINISHED"}
    assert sorted(p.anchor for p in obj.welman_ik.pins) == [0.0, 1.0]


def test_a_bakes_floor_figures_measured_all_at_once_are_each_frames_own(bare_human):
    """The bake measures its floor pins on every frame at once (``FloorFrames``: each frame's
    pose matrices read raw, the depths worked out together): the armature turned and scaled
    in the world, the feet sinking through the floor on some frames, each frame's figures are
    those of the frame-by-frame measure to the last bit, and the largest reported is how far
    the lowest foot point is below the floor in the evaluated pose."""
    from mathutils import Euler, Matrix, Vector

    from welman_ik.blender.bake import measure, measure_shaped

    obj = bare_human
    obj.matrix_world = Matrix.LocRotScale(Vector((0.1, -0.2, 0.0)), Euler((0.0, 0.0, 0.5)), Vector((1.1, 1.1, 1.1)))
    spine = obj.pose.bones["spine"]
    spine.keyframe_insert("location", frame=1)
    spine.location = (0.0, -0.2, 0.0)
    spine.keyframe_insert("location", frame=10)
    floor_pins(obj)
    obj.welman_ik.pins[0].weight = 0.0  # (informative: measured, never counted)
    compared = []
    original = measure.BakeMeasure.frames

    def both(self):
        together = original(self)
        key, measure_shaped.ShapedMeasure.floors_key = measure_shaped.ShapedMeasure.floors_key, lambda self, e: None
        try:
            alone = original(self)
        finally:
            measure_shaped.ShapedMeasure.floors_key = key
        compared.append((together, alone))
        return together

    measure.BakeMeasure.frames = both
    try:
        with scenes.quiet():
            assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    finally:
        measure.BakeMeasure.frames = original
    together, alone = compared[-1]
    assert sorted(together) == list(range(1, 11))
    assert max(float(m.errors.max()) for m in together.values()) > 0.01  # (the informative pin's depth)
    for frame in together:
        assert together[frame].errors.tolist() == alone[frame].errors.tolist(), frame
        assert together[frame].met.tolist() == alone[frame].met.tolist(), frame
        assert together[frame].counted.tolist() == alone[frame].counted.tolist(), frame
    informative = (obj.welman_ik.pins[0].bone, obj.welman_ik.pins[0].anchor)
    depth, free = [], []
    for frame in range(1, 11):
        bpy.context.scene.frame_set(frame)
        depth += [-float(world_point(obj, bone, anchor)[2]) for bone, anchor in FEET if (bone, anchor) != informative]
        free.append(-float(world_point(obj, *informative)[2]))
    assert max(free) > 0.01  # the informative pin's point, not held, goes through the floor
    assert obj.welman_ik.last_solve.max_pin_error == pytest.approx(max(0.0, *depth), abs=1e-6)
