"""How fast CCD settles a drag against pins: a two-legged figure, both feet pinned (by
position pins on the toes and heels, or by pose pins on the feet), the hips dragged 25 cm
straight down, in one jump and in strides.

The pins and the drag share the root's sliders, and the knees are nearly straight, which
gives the legs little lever to fold. Before the shared joints followed the drag and the
sweeps were accelerated (``ccd.solve``), CCD took 100-300 sweeps for these squats, and
the strides from standing did not settle in 300."""

from __future__ import annotations

import numpy as np
import pytest
from chains import translation

from welman_ik.core import SOLVERS, PoseGoal, PositionGoal, Problem, Skeleton
from welman_ik.core.problem import goal_errors

X, Y, Z = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
SWEEPS = 60  # the most a squat may take
DROP = 0.25  # [m] how far the hips are dragged down


def legs() -> tuple[Skeleton, dict[str, tuple[int, np.ndarray]]]:
    """A root of three sliders at the hips (1 m up, +z), then for each leg: a ball hip, a
    ball knee 0.5 m below it and 4 cm forward (-y: the knee slightly bent, as a figure
    stands) and a ball ankle 0.48 m below that (every bone a ball, as the add-on makes a
    Rigify leg). Returns the tree and its points (joint, local): the hips, and on each
    foot (the ankle's frame) its middle, toe and heel."""
    parent: list[int] = []
    axis: list[list[float]] = []
    offsets: list[list[float]] = []

    def add(p: int, ax, offset) -> int:
        parent.append(p)
        axis.append(ax)
        offsets.append(offset)
        return len(parent) - 1

    def ball(p: int, offset) -> int:
        return add(add(add(p, X, offset), Y, [0, 0, 0]), Z, [0, 0, 0])

    root = add(add(add(-1, X, [0, 0, 1.0]), Y, [0, 0, 0]), Z, [0, 0, 0])
    points = {"hips": (root, np.zeros(3))}
    for side, name in ((1, "L"), (-1, "R")):
        knee = ball(ball(root, [0.1 * side, 0.0, 0.0]), [0.0, -0.04, -0.5])
        ankle = ball(knee, [0.0, 0.04, -0.48])
        points[f"foot.{name}"] = (ankle, np.array([0.0, -0.13, -0.08]))
        points[f"toe.{name}"] = (ankle, np.array([0.0, -0.2, -0.08]))
        points[f"heel.{name}"] = (ankle, np.array([0.0, 0.06, -0.08]))
    n = len(parent)
    prismatic = np.zeros(n, dtype=bool)
    prismatic[:3] = True
    rest = np.stack([translation(o) for o in offsets])
    sk = Skeleton(parent=np.array(parent), prismatic=prismatic, axis=np.array(axis), rest=rest,
                  lower=np.full(n, -np.inf), upper=np.full(n, np.inf), mobility=np.ones(n))
    return sk, points


def world(sk: Skeleton, q: np.ndarray, where: tuple[int, np.ndarray]) -> np.ndarray:
    return sk.forward(q).points(np.array([where[0]]), where[1][None])[0]


def squat(pins: str, drop: float = DROP) -> tuple[Problem, np.ndarray]:
    """The figure standing (q = 0), its feet pinned where they stand (priority 0), the hips
    dragged ``drop`` metres down (priority 1), the standing pose preferred."""
    sk, points = legs()
    q0 = np.zeros(sk.size)
    kin = sk.forward(q0)
    goals = []
    for name in ("L", "R"):
        if pins == "POSITION":
            goals += [PositionGoal(*points[f"{part}.{name}"], world(sk, q0, points[f"{part}.{name}"]))
                      for part in ("toe", "heel")]
        else:
            joint, local = points[f"foot.{name}"]
            linear = kin.frames[joint, :3, :3]
            goals.append(PoseGoal(joint, local, world(sk, q0, points[f"foot.{name}"]),
                                  linear / np.linalg.norm(linear, axis=0), length=0.15))
    goals.append(PositionGoal(*points["hips"], world(sk, q0, points["hips"]) - [0.0, 0.0, drop], priority=1))
    return Problem(sk, goals, tolerance=1e-5, max_iterations=300, reference=q0), q0


def held(problem: Problem, q: np.ndarray) -> np.ndarray:
    """Every goal's error at q, recomputed from scratch."""
    return goal_errors(problem.goals, problem.skeleton.forward(q))


@pytest.mark.parametrize("pins", ["POSITION", "POSE"])
def test_a_squat_in_one_jump_settles_in_few_sweeps(pins: str) -> None:
    """The hips 25 cm down in one solve: pins within 1e-5 m, the drag within 1e-5 m, in at
    most ``SWEEPS`` sweeps (the shared root follows the drag, the legs fold under it)."""
    problem, q0 = squat(pins)
    result = SOLVERS["CCD"](problem, q0)
    errors = held(problem, result.q)
    assert result.converged, errors
    assert errors.max() <= 1e-5
    assert result.iterations <= SWEEPS, result.iterations


@pytest.mark.parametrize("pins", ["POSITION", "POSE"])
@pytest.mark.parametrize("stride", [0.05, 0.01])
def test_a_squat_in_strides_settles_each_in_few_sweeps(pins: str, stride: float) -> None:
    """The same squat as a drag makes it, in strides of 5 cm or 1 cm, each solve from the
    last: every stride meets every goal, none takes more than ``SWEEPS`` sweeps (the first
    strides fold nearly straight knees), and the hips end 25 cm down with the feet held."""
    problem, q = squat(pins)
    drag = problem.goals[-1]
    end = drag.target.copy()
    start = end + [0.0, 0.0, DROP]
    steps = round(DROP / stride)
    for t in np.linspace(0.0, 1.0, steps + 1)[1:]:
        drag.target = start + t * (end - start)
        result = SOLVERS["CCD"](problem, q)
        assert result.converged, (t, result.errors)
        assert result.iterations <= SWEEPS, (t, result.iterations)
        q = result.q
    errors = held(problem, q)
    assert errors.max() <= 1e-5, errors
    assert np.linalg.norm(world(problem.skeleton, q, (drag.joint[0], drag.local[0])) - end) <= 1e-5


def test_a_drag_out_of_reach_leaves_the_pins_exact() -> None:
    """The hips dragged 2.2 m down, 1.2 m below the feet, more than a leg's length: the solve
    stops early, the pins within 1e-5 m, the hips as low as the legs let them go -- not left
    where they stood: 0.237 m from the target (0.25 m asked), not 2.2 m."""
    problem, q0 = squat("POSE", drop=2.2)
    result = SOLVERS["CCD"](problem, q0)
    errors = held(problem, result.q)
    assert errors[:-1].max() <= 1e-5, errors
    assert not result.converged
    assert errors[-1] <= 0.25, errors
    assert result.iterations < problem.max_iterations
