"""The limbs first, the trunk for the rest, the head kept looking (``solvers.limbs_first``),
and finding the trunk by a tree's shape (``core.body``)."""

from __future__ import annotations

import numpy as np
import pytest
from chains import translation

from welman_ik.core import SOLVERS, PositionGoal, Problem, Skeleton
from welman_ik.core.body import body_parts, trunk_by_shape

AXES = np.eye(3)


class Body:
    """A figure on a fixed pelvis: two trunk ball joints up to the chest; from the chest an
    arm (shoulder ball, elbow hinge, wrist ball, hand 0.15 m) out along -x, and a neck ball
    with a head ball above it. Joint lists are kept per part."""

    def __init__(self):
        self.parent, self.axis, self.rest = [], [], []
        self.trunk = self._ball(-1, [0, 0, 0]) + self._ball(None, [0, 0, 0.25])
        chest = self.trunk[-1]
        self.chest = chest
        self.shoulder = self._ball(chest, [-0.2, 0, 0.25])
        self.elbow = self._hinge(self.shoulder[-1], [-0.3, 0, 0], AXES[1])
        self.wrist = self._ball(self.elbow[-1], [-0.28, 0, 0])
        self.neck = self._ball(chest, [0, 0, 0.3])
        self.head = self._ball(self.neck[-1], [0, 0, 0.1])
        n = len(self.parent)
        self.skeleton = Skeleton(parent=np.array(self.parent), prismatic=np.zeros(n, bool), axis=np.array(self.axis),
                                 rest=np.array(self.rest), lower=np.full(n, -np.inf), upper=np.full(n, np.inf),
                                 mobility=np.ones(n))
        self.tiers = np.zeros(n, dtype=np.intp)
        self.tiers[self.trunk] = 1
        self.hand = (self.wrist[-1], np.array([-0.15, 0.0, 0.0]))

    def _add(self, parent, offset, axis) -> int:
        self.parent.append(len(self.parent) - 1 if parent is None else parent)
        self.axis.append(axis)
        self.rest.append(translation(offset))
        return len(self.parent) - 1

    def _ball(self, parent, offset) -> list[int]:
        first = self._add(parent, offset, AXES[0])
        return [first, self._add(first, [0, 0, 0], AXES[1]), self._add(first + 1, [0, 0, 0], AXES[2])]

    def _hinge(self, parent, offset, axis) -> list[int]:
        return [self._add(parent, offset, axis)]

    def problem(self, target, tiers=True, gaze=True, q0=None) -> Problem:
        joint, local = self.hand
        q0 = np.zeros(self.skeleton.size) if q0 is None else q0
        return Problem(self.skeleton, [PositionGoal(joint, local, target)], tolerance=1e-6, max_iterations=300,
                       reference=q0.copy(), tiers=self.tiers if tiers else None,
                       gaze=self.head[-1] if gaze else None)

    def hand_point(self, q) -> np.ndarray:
        joint, local = self.hand
        return self.skeleton.forward(q).points(np.array([joint]), local[None])[0]

    def shoulder_point(self) -> np.ndarray:
        return self.skeleton.forward(np.zeros(self.skeleton.size)).origins[self.shoulder[0]]

    def head_turn(self, q) -> float:
        a = self.skeleton.forward(np.zeros(self.skeleton.size)).frames[self.head[-1]][:3, :3]
        b = self.skeleton.forward(q).frames[self.head[-1]][:3, :3]
        return float(np.degrees(np.arccos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0))))


ARM_LENGTH = 0.3 + 0.28 + 0.15
WAYS = {"up": [0, 0, 1], "forward": [0, -1, 0], "down": [0, 0, -1], "across": [0.6, -0.8, 0]}


@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("way", list(WAYS))
def test_the_arm_reaches_alone(solver, way) -> None:
    """A target the arm can reach: the hand gets there with the trunk and the head where they
    were; without the tiers the trunk takes a share (so the test can tell)."""
    body = Body()
    direction = np.asarray(WAYS[way], dtype=float)
    target = body.shoulder_point() + 0.7 * ARM_LENGTH * direction / np.linalg.norm(direction)
    result = SOLVERS[solver](body.problem(target), np.zeros(body.skeleton.size))
    assert result.converged, result.errors
    assert np.linalg.norm(body.hand_point(result.q) - target) <= 1e-5
    assert np.abs(result.q[body.trunk]).max() == 0.0
    assert body.head_turn(result.q) <= 1e-6
    if solver in ("SR_INVERSE", "QUASI_NEWTON") and way in ("up", "forward"):
        shared = SOLVERS[solver](body.problem(target, tiers=False, gaze=False), np.zeros(body.skeleton.size))
        assert np.degrees(np.abs(shared.q[body.trunk]).max()) > 1.0


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_out_of_reach_the_trunk_leans_and_the_head_keeps_looking(solver) -> None:
    """A target beyond the arm: the trunk joins and the hand gets there; the neck keeps the
    head's world orientation (off: it turns with the chest)."""
    body = Body()
    target = body.shoulder_point() + np.array([-0.35, -0.75, -0.1])
    result = SOLVERS[solver](body.problem(target), np.zeros(body.skeleton.size))
    assert result.converged, result.errors
    assert np.degrees(np.abs(result.q[body.trunk]).max()) > 5.0
    assert body.head_turn(result.q) <= 0.1
    turned = SOLVERS[solver](body.problem(target, gaze=False), np.zeros(body.skeleton.size))
    assert body.head_turn(turned.q) > 5.0


def test_a_goal_on_the_head_is_not_undone_by_the_gaze() -> None:
    """A goal on the head: the neck serves it; the gaze leaves it alone."""
    body = Body()
    start = body.skeleton.forward(np.zeros(body.skeleton.size)).origins[body.head[-1]]
    goal = PositionGoal(body.head[-1], np.array([0.0, 0.0, 0.2]), start + np.array([0.0, -0.1, 0.15]))
    problem = Problem(body.skeleton, [goal], tolerance=1e-6, max_iterations=300,
                      reference=np.zeros(body.skeleton.size), tiers=body.tiers, gaze=body.head[-1])
    result = SOLVERS["SR_INVERSE"](problem, np.zeros(body.skeleton.size))
    assert result.converged


def test_the_trunk_by_shape() -> None:
    """Pelvis (legs and spine part) and chest (arms and neck part) are trunk, and what is
    between them; limbs, fingers and the head are not."""
    names = ["pelvis", "spine1", "chest", "neck", "head", "thigh.L", "shin.L", "thigh.R", "shin.R",
             "arm.L", "fore.L", "hand.L", "f1.L", "f2.L", "arm.R", "fore.R", "hand.R", "f1.R", "f2.R"]
    parents = {"pelvis": None, "spine1": "pelvis", "chest": "spine1", "neck": "chest", "head": "neck",
               "thigh.L": "pelvis", "shin.L": "thigh.L", "thigh.R": "pelvis", "shin.R": "thigh.R",
               "arm.L": "chest", "fore.L": "arm.L", "hand.L": "fore.L", "f1.L": "hand.L", "f2.L": "hand.L",
               "arm.R": "chest", "fore.R": "arm.R", "hand.R": "fore.R", "f1.R": "hand.R", "f2.R": "hand.R"}
    lengths = {n: 0.3 for n in names} | {"f1.L": 0.04, "f2.L": 0.04, "f1.R": 0.04, "f2.R": 0.04}
    trunk, girdle, neck, head = body_parts(names, parents, lengths)
    assert trunk == {"pelvis", "spine1", "chest"}
    assert (girdle, neck, head) == (set(), set(), "")
    assert not trunk_by_shape([-1, 0, 1, 2], [1.0, 1.0, 1.0, 1.0]).any()  # a single chain has no trunk


def test_the_trunk_by_naming() -> None:
    """A metarig's spine chain: trunk below the collarbones, neck above, the head on top."""
    names = ["spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005", "spine.006",
             "shoulder.L", "upper_arm.L", "forearm.L", "shoulder.R", "upper_arm.R", "forearm.R",
             "thigh.L", "shin.L", "thigh.R", "shin.R"]
    parents = {"spine": None, "spine.001": "spine", "spine.002": "spine.001", "spine.003": "spine.002",
               "spine.004": "spine.003", "spine.005": "spine.004", "spine.006": "spine.005",
               "shoulder.L": "spine.003", "upper_arm.L": "shoulder.L", "forearm.L": "upper_arm.L",
               "shoulder.R": "spine.003", "upper_arm.R": "shoulder.R", "forearm.R": "upper_arm.R",
               "thigh.L": "spine", "shin.L": "thigh.L", "thigh.R": "spine", "shin.R": "thigh.R"}
    trunk, girdle, neck, head = body_parts(names, parents, {n: 0.2 for n in names})
    assert trunk == {"spine", "spine.001", "spine.002", "spine.003"}
    assert girdle == {"shoulder.L", "shoulder.R"}
    assert neck == {"spine.004", "spine.005"}
    assert head == "spine.006"
