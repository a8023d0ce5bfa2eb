"""The arm's posture for a reach (``solvers.posture``): the wrist along the forearm and the
elbow hanging, under every solver."""

from __future__ import annotations

import numpy as np
import pytest
from test_limbs_first import ARM_LENGTH, Body

from welman_ik.core import SOLVERS
from welman_ik.core.solvers.posture import arm_groups

WAYS = {"up": [0, 0, 1], "side": [-1, 0, 0], "forward": [0, -1, 0], "across": [0.6, -0.8, 0]}
WRIST_LIMIT = 25.0  # [deg] the hand off the forearm's line
ELBOW_LIMIT = 0.02  # [m] the elbow above the shoulder-wrist line


def posture(body: Body, q) -> tuple[float, float]:
    """(wrist [deg], elbow [m]): the angle between the forearm (elbow to wrist) and the hand
    (wrist to the hand's point), and the world-Z part of the elbow's offset from the line from
    the shoulder to the wrist (positive: above)."""
    kin = body.skeleton.forward(q)
    shoulder, elbow, wrist = (kin.origins[j[0]] for j in (body.shoulder, body.elbow, body.wrist))
    forearm, hand = wrist - elbow, body.hand_point(q) - wrist
    angle = np.degrees(np.arccos(np.clip(forearm @ hand / np.linalg.norm(forearm) / np.linalg.norm(hand), -1, 1)))
    line = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
    offset = (elbow - shoulder) - ((elbow - shoulder) @ line) * line
    return float(angle), float(offset[2])


@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("bent", [False, True])
def test_the_arm_reaches_as_a_person_does(solver, way, bent) -> None:
    """A target 0.8 of the arm's length up, to the side, forward or across, from a straight or
    a bent arm: the hand gets there along the forearm (within 25 degrees), the elbow no more
    than 2 cm above the shoulder-wrist line, the trunk and the head where they were."""
    body = Body()
    q0 = np.zeros(body.skeleton.size)
    if bent:
        q0[body.elbow] = 0.3
    direction = np.asarray(WAYS[way], dtype=float)
    target = body.shoulder_point() + 0.8 * ARM_LENGTH * direction / np.linalg.norm(direction)
    result = SOLVERS[solver](body.problem(target, q0=q0), q0)
    assert result.converged, result.errors
    assert np.linalg.norm(body.hand_point(result.q) - target) <= 1e-5
    wrist, elbow = posture(body, result.q)
    assert wrist <= WRIST_LIMIT, wrist
    assert elbow <= ELBOW_LIMIT, elbow
    assert np.abs(result.q[body.trunk]).max() == 0.0
    assert body.head_turn(result.q) <= 1e-6


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_a_drag_back_to_the_start_comes_back(solver) -> None:
    """The posture is the target's alone: dragged out and back in steps, the arm ends as it
    began."""
    body = Body()
    q0 = np.zeros(body.skeleton.size)
    q0[body.elbow] = 0.3
    start = body.hand_point(q0)
    way = np.array([0.1, -0.25, 0.15])
    q = q0
    for t in [*np.linspace(0.1, 1.0, 10), *np.linspace(0.9, 0.0, 10)]:
        q = SOLVERS[solver](body.problem(start + t * way, q0=q0), q).q
    assert np.degrees(np.abs(q - q0).max()) <= 0.5


def test_only_an_arm_is_placed() -> None:
    """The hand's joint is an arm's (wrist, elbow, shoulder); the head's, a joint of the trunk
    or an elbow's is not."""
    body = Body()
    problem = body.problem(body.shoulder_point())
    limbs = body.tiers == 0
    found = arm_groups(problem, limbs, body.hand[0])
    assert found is not None
    assert [list(g) for g in found] == [body.wrist, body.elbow, body.shoulder]
    for joint in (body.head[-1], body.trunk[-1], body.elbow[-1]):
        assert arm_groups(problem, limbs, joint) is None


def test_what_the_tree_decides_is_kept_and_what_the_solve_decides_is_asked_each_time() -> None:
    """The arm's joints are worked out once per tree, tiers and limbs, but whether it is placed
    is the solve's: a shoulder held still, another goal riding on the arm or other tiers (a
    trunk joint among the limbs) each leave it unplaced on the same tree, and a solve without
    them places it again."""
    from dataclasses import replace

    from welman_ik.core import PositionGoal

    body = Body()
    problem = body.problem(body.shoulder_point())
    limbs = body.tiers == 0
    found = arm_groups(problem, limbs, body.hand[0])
    assert [list(g) for g in found] == [body.wrist, body.elbow, body.shoulder]
    held = np.ones(body.skeleton.size, dtype=bool)
    held[body.shoulder[1]] = False
    assert arm_groups(replace(problem, active=held), limbs, body.hand[0]) is None
    riding = PositionGoal(body.elbow[-1], np.zeros(3), body.shoulder_point())
    assert arm_groups(replace(problem, goals=[*problem.goals, riding]), limbs, body.hand[0]) is None
    trunk_in_limbs = limbs.copy()
    trunk_in_limbs[body.trunk] = True
    assert arm_groups(problem, trunk_in_limbs, body.hand[0]) is None
    again = arm_groups(problem, limbs, body.hand[0])
    assert [list(g) for g in again] == [body.wrist, body.elbow, body.shoulder]
