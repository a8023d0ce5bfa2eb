"""Step 2 of the bake, a frame's goals: where each pin in force holds on the frame (its own
place, or the animation's for a follow pin, eased toward the animation near an open range
end), the edit's target, and the roots' animated path ('FOLLOW'), from the plan and the
frame's sample alone (``frame_goals``). The path's goals below everything else, which
depend on where the last frame left the roots, are added by the solve (``path_goals``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mathutils import Matrix, Quaternion

from ...core import PositionGoal
from ..pins.goals import SHAPED_KINDS, pin_bones, support_points
from .frames import pin_share
from .tree import Tree

ROOT_RETURN = 0.002  # share of the rig's size the hips may move back toward their path per frame ('FOLLOW')


@dataclass
class FrameGoals:
    """A frame's goals (the user's: the pins' and the edit's), and what the log and the
    measure need of how they were made."""

    frame: int
    share: float  # the frame's range weight
    goals: list  # the pins' goals (position pins first, then the other kinds), then the edit's
    in_force: list  # (pin, target): a position pin's world target, another kind's fields
    log: list  # (bone, anchor, target, weight, priority) of each position goal, then the edit's
    shaped: list  # (pin, fields) of the other kinds
    support: object  # the support polygon's points (balance pins)
    path: dict  # (root, anchor) -> its animated place ('FOLLOW'; the solve may add goals on it)
    moving_key: tuple  # the pins in force and whether an edit is: frames alike have the same moving joints

    def steered(self, obj) -> list[tuple[str, float]]:
        """The (bone, anchor) points the goals steer."""
        points = [(bone, anchor) for bone, anchor, *_ in self.log] + (list(self.path) if self.goals else [])
        return points + [(name, pin.anchor if name == pin.bone else pin.target_anchor)
                         for pin, _ in self.shaped for name in pin_bones(obj, pin) if pin.kind != "BALANCE"]


def frame_goals(plan, sample) -> FrameGoals:
    """The goals of ``sample``'s frame (its tree, at the animated pose)."""
    frame, tree, animated = sample.frame, sample.tree, sample.animated
    share = plan.shares.get(frame, 1.0)
    pin_priority, edit_priority = plan.priorities
    in_force = pin_targets(plan, tree, animated, frame, share)
    shaped = [(pin, fields) for pin, fields in in_force if pin.kind in SHAPED_KINDS]
    goals, log = [], []
    for pin, target in in_force:
        if pin.kind not in SHAPED_KINDS:
            goals.append(tree.position_goal(pin, target, pin_priority, pin_share(pin, share)))
            log.append((pin.bone, pin.anchor, target, pin.weight, pin_priority))
    support = support_points(in_force)
    goals += [tree.shaped_goal(plan.obj, animated, pin, pin_priority, support, fields) for pin, fields in shaped]
    edit = plan.edit
    if edit is not None:
        target = tree.point(animated, edit.bone, edit.anchor) + edit.weight(frame) * edit.displacement
        goals.append(PositionGoal(*tree.anchor(edit.bone, edit.anchor), target, priority=edit_priority))
        log.append((edit.bone, edit.anchor, target, 1.0, edit_priority))
    # The roots' head and tail on their animated path ('FOLLOW'): the path and the way the root points.
    path = {(name, anchor): tree.point(animated, name, anchor)
            for name in tree.roots() for anchor in (0.0, 1.0)} if plan.root_motion == "FOLLOW" else {}
    key = (tuple(p.as_pointer() for p in plan.pins_in_force(frame)), edit is not None)
    if plan.source is not None:  # goals from elsewhere (a retarget's), in place of the pins'
        index = plan.index(frame)
        goals += plan.source.goals(tree, index)
        key = plan.source.frame_key(index)
    return FrameGoals(frame, share, goals, in_force, log, shaped, support, path, key)


def pin_targets(plan, tree: Tree, animated, frame: int, share: float = 1.0) -> list[tuple]:
    """(pin, target) of each pin in force on ``frame``. A position pin's target is a world
    point: a follow pin's where the animation (``animated``: the tree's forward kinematics
    there) puts it, a pin that follows a target where the target has it on the frame. The
    other kinds' is the fields their goal is built with (``shaped_fields``). ``share`` < 1
    (near a range end the action goes on past): each goal eased that share of the way from
    the animated pose."""
    out = []
    for pin in plan.pins_in_force(frame):
        eased = pin_share(pin, share)
        placed = plan.placed(pin, frame)
        if pin.kind in SHAPED_KINDS:
            out.append((pin, shaped_fields(tree, animated, pin, eased, placed)))
            continue
        follow = pin.follow and placed is None
        held = placed if placed is not None else None if follow else plan.fixed_goals[plan.pin_index[pin.as_pointer()]]
        if not follow and eased >= 1.0:
            out.append((pin, held))
            continue
        origin = tree.point(animated, pin.bone, pin.anchor)
        target = origin if follow else held
        out.append((pin, origin + eased * (target - origin) if eased < 1.0 else target))
    return out


def shaped_fields(tree: Tree, animated, pin, share: float = 1.0, placed: dict | None = None) -> dict:
    """The fields a pin of another kind than POSITION is built with on a frame: a follow
    pin's place and orientation are where the animation puts its bone, a pin's that follows
    a target where the target has them (``placed``); with ``share`` < 1 a place and an
    orientation are eased that share of the way from the animated ones (an aim, a together
    and a balance pin hold in full)."""
    follow = pin.follow and placed is None
    if pin.kind in {"TOGETHER", "BALANCE", "AIM"} or (not follow and share >= 1.0):
        return dict(placed or {})
    joint, local = tree.model.anchor_local(pin.bone, pin.anchor)
    origin = animated.points(np.array([joint]), local[None])[0]
    frame = animated.frames[joint]
    axes = frame[:3, :3] / np.linalg.norm(frame[:3, :3], axis=0)
    location = origin if follow else np.array(pin.location if placed is None else placed["location"], dtype=float)
    fields = {"location": origin + share * (location - origin)}
    if placed is not None:
        fields["direction"] = placed["direction"]
    if pin.kind in {"ORIENTATION", "POSE"}:
        if not follow:
            animated_turn = Matrix([list(row) for row in axes]).to_quaternion()
            held = (Quaternion(pin.rotation) if placed is None
                    else Matrix(placed["rotation_matrix"].tolist()).to_quaternion()).normalized()
            axes = np.array(animated_turn.slerp(held, share).to_matrix(), dtype=float)
        fields["rotation_matrix"] = axes
    return fields


def path_goals(tree: Tree, animated, path: dict, goals: list, share: float, root_off: dict) -> list:
    """The roots' animated ``path`` as goals below everything else in ``goals``: left only
    where and as far as a pin needs (the solver's own goals, not reported as pins). Where
    the last frame left the path (``root_off``), the way back is at most ``ROOT_RETURN`` of
    the rig's size per frame: the hips glide back instead of snapping."""
    below = max(g.priority for g in goals) + 1
    step = ROOT_RETURN * animated.size_scale() if root_off else 0.0
    out = []
    for (name, anchor), on_path in path.items():
        off = root_off.get((name, anchor))
        if off is not None:
            distance = float(np.linalg.norm(off))
            off = off * max(0.0, 1.0 - step / distance) if distance > 0.0 else off
        target = on_path if off is None else on_path + share * off
        out.append(PositionGoal(*tree.anchor(name, anchor), target, priority=below))
    return out


def off_path(tree: Tree, q0: np.ndarray, q: np.ndarray, path: dict) -> dict:
    """How far the solution ``q`` leaves each point of the roots' ``path`` (none where the
    roots did not move from their animated values ``q0``: their points are on it)."""
    roots = tree.root_joints()
    if not path or np.array_equal(q[roots], q0[roots]):
        return {}
    solved = tree.model.skeleton.forward(q)
    return {key: tree.point(solved, *key) - on_path for key, on_path in path.items()}
