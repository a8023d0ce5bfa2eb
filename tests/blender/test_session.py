"""The interactive drag's logic, fed synthetic mouse rays (no window needed)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from conftest import channels, pin_errors, world_point

from welman_ik.blender.drag.session import DEFAULT_ANCHOR, DragSession, closest_point_on_ray
from welman_ik.blender.rig import keyframes

FRONT = np.array([0.0, 1.0, 0.0])  # a front orthographic view looks along +Y


def front_ray(x: float, z: float) -> tuple[np.ndarray, np.ndarray]:
    """The ray under the mouse at world (x, z) in a front orthographic view."""
    return np.array([x, -10.0, z]), FRONT


def path(start: np.ndarray, end: np.ndarray, steps: int):
    for t in np.linspace(0.0, 1.0, steps + 1)[1:]:
        yield start + t * (end - start)


def test_closest_point_on_ray():
    # Orthographic: the goal stays in the plane through the effector facing the view.
    np.testing.assert_allclose(closest_point_on_ray([1.0, -10.0, 2.0], FRONT, [0.0, 0.3, 0.0]), [1.0, 0.3, 2.0])
    # Perspective: the foot of the perpendicular from the effector.
    np.testing.assert_allclose(closest_point_on_ray([0, 0, 0], [1, 1, 0], [2, 0, 0]), [1, 1, 0])
    # Never behind the viewer.
    np.testing.assert_allclose(closest_point_on_ray([0, 0, 0], [1, 0, 0], [-5, 1, 0]), [0, 0, 0])


def test_drag_follows_the_mouse_and_pins_hold(human):
    drag = DragSession(human, "hand.R")
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    end = start + np.array([0.25, 0.0, 0.3])
    for point in path(start, end, 12):
        figures = drag.move(*front_ray(point[0], point[2]))
        assert max(pin_errors(human).values()) <= 1e-4
        assert figures.drag_error <= 1e-4
    reached = world_point(human, "hand.R", DEFAULT_ANCHOR)
    assert np.linalg.norm(reached[[0, 2]] - end[[0, 2]]) <= 1e-4  # under the cursor
    assert len(drag.milliseconds) == 12


def test_cancel_after_100_events_restores_exactly(human):
    human.animation_data_create()
    before = channels(human)
    drag = DragSession(human, "hand.R")
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    for i, point in enumerate(path(start, start + np.array([0.3, 0.0, 0.35]), 100)):
        if i == 50:
            drag.change_chain_length(+2)
        drag.move(*front_ray(point[0], point[2]))
    assert channels(human) != before
    drag.cancel()
    assert channels(human) == before  # bit for bit
    assert keyframes.action_fcurves(human) == []


def test_confirm_keys_the_moved_bones(human):
    bpy.context.scene.frame_current = 4
    drag = DragSession(human, "hand.R")
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    for point in path(start, start + np.array([0.2, 0.0, 0.2]), 10):
        drag.move(*front_ray(point[0], point[2]))
    solved = channels(human)
    moved = drag.confirm(bpy.context)
    assert {"upper_arm.R", "forearm.R"} <= set(moved)  # (the hand keeps its turn on the forearm: the wrist)
    keyed = {fc.data_path.split('"')[1] for fc in keyframes.action_fcurves(human)}
    assert keyed == set(moved)
    # The legs under the pinned feet change by rounding only: not keyed, and not called moved.
    assert not keyed & {"thigh.L", "shin.L", "thigh.R", "shin.R"}
    assert all(any(k.co[0] == 4 for k in fc.keyframe_points) for fc in keyframes.action_fcurves(human))
    assert channels(human) == solved
    assert human.welman_ik.last_solve.converged


def test_chain_length_limits_what_moves(human):
    drag = DragSession(human, "hand.R")
    assert drag.change_chain_length(+2) == 2
    before = channels(human)
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    drag.move(*front_ray(start[0] + 0.05, start[2] + 0.05))
    after = channels(human)
    changed = {name for name in before if before[name] != after[name]}
    assert changed and changed <= {"hand.R", "forearm.R"}
    assert drag.change_chain_length(-5) == 0


def test_solver_cycles_live(human):
    """Tab cycles the four solvers mid-drag and back; each one, once chosen, solves the next
    mouse event: the hand on the mouse's ray and the pins held, on the evaluated pose (no
    time budget per event: a busy machine must not decide it)."""
    drag = DragSession(human, "hand.R", event_budget=None)
    seen = [human.welman_ik.solver]
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    for i in range(4):
        seen.append(drag.cycle_solver())
        assert human.welman_ik.solver == seen[-1]
        x, z = start[0] + 0.01 * (i + 1), start[2] + 0.01 * (i + 1)
        drag.move(*front_ray(x, z))
        reached = world_point(human, "hand.R", DEFAULT_ANCHOR)
        assert abs(reached[0] - x) <= 1e-4 and abs(reached[2] - z) <= 1e-4, (seen[-1], reached)
        assert max(pin_errors(human).values()) <= 1e-4, seen[-1]
    assert seen[0] == seen[4] and len(set(seen)) == 4


@pytest.mark.parametrize("bone", ["hand.X", ""])
def test_session_refuses_unknown_bones(human, bone):
    from welman_ik.blender.rig.model import RigError

    with pytest.raises(RigError):
        DragSession(human, bone)
