"""The hinge tree: single-degree-of-freedom joints, forward kinematics and Jacobian columns.

A ball joint is several hinges at one point (Welman 1993, section 6.1.1); a free
translation is three prismatic joints. Joint ``i`` carries a frame

    F_i = F_parent(i) @ rest_i @ M_i(q_i)

where ``rest_i`` is a fixed 4x4 transform (offset and orientation relative to the
parent's frame) and ``M_i`` rotates by ``q_i`` radians about ``axis_i`` (revolute) or
translates by ``q_i`` metres along it (prismatic). The frame of joint -1 is ``base``,
any affine 4x4 (an armature object's world matrix, scale included).

A joint with ``inherits[i]`` False (Blender's ``use_inherit_rotation`` off, BONE_HINGE)
keeps its head on the parent's pose but not the parent's orientation:

    F_i = [[B R_i, F_parent(i) @ [t_i; 1]], [0, 1]] @ M_i(q_i),

with B the linear part of ``base`` and (R_i, t_i) the linear part and offset of
``rest_i``. Its subtree is then a translate of one hung from [[B, 0], [0, 1]]: with
G_i = [[B R_i, 0], [0, 1]] M_i and G_k = G_parent(k) rest_k M_k below it,
F_k = T(x_i) G_k (T: translation) down to the next non-inheriting joint, where the head
is x_i = F_parent(i) @ [t_i; 1], i.e. x_i = x_h + G_parent(i) @ [t_i; 1] with h the
nearest non-inheriting joint above i (x_h = 0 if none).

Rotating joint j therefore moves a point on a joint below it rigidly only down to the
first non-inheriting joint h under j on the way; below h only the translation of h's
head x_h is passed on, so the point moves as x_h does (``Skeleton.lever``).

Everything is computed over all joints at once: ceil(log2(depth + 2)) batched products
(pointer jumping, each non-inheriting joint starting a product of its own), then one
shift of each non-inheriting subtree by its head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices of vectors ``v`` (..., 3) -> (..., 3, 3)."""
    k = np.zeros(v.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2] = -v[..., 2], v[..., 1]
    k[..., 1, 0], k[..., 1, 2] = v[..., 2], -v[..., 0]
    k[..., 2, 0], k[..., 2, 1] = -v[..., 1], v[..., 0]
    return k


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (broadcasting); cheaper than np.cross on small arrays."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def axis_angle_matrices(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rodrigues' formula for unit ``axis`` (n, 3) and ``angle`` (n,) radians -> (n, 3, 3)."""
    k = _skew(axis)
    s = np.sin(angle)[:, None, None]
    c = np.cos(angle)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


_KEPT = 8  # forward results a skeleton keeps (a scripted SR drag: 10 evaluations, 5 distinct)


@dataclass(frozen=True, eq=False)
class Skeleton:
    """A tree of revolute and prismatic joints, parents before children.

    parent:    (n,) int, ``parent[i] < i``; -1 means the base frame.
    prismatic: (n,) bool, True for a sliding joint [metres], False for a hinge [radians].
    axis:      (n, 3) unit axis in the joint's own frame.
    rest:      (n, 4, 4) transform from the parent's frame to this joint's frame at q = 0.
    lower, upper: (n,) joint limits [radians or metres]; use -inf/inf for none.
    mobility:  (n,) in [0, 1]: Welman's stiffness factor; 0 freezes the joint, 1 is free.
               (Blender's ``ik_stiffness`` s maps to mobility 1 - s.)
    base:      (4, 4) affine frame of the tree's root.
    inherits:  (n,) bool, default all True. False: the joint's orientation does not follow
               its parent's pose; the linear part of ``rest`` is then taken relative to the
               base frame, its offset still relative to the parent's posed frame (see the
               module docstring). No effect on a joint whose parent is -1.

    Derived: ``ancestors`` (n, n) bool, ``ancestors[i, j]``: j is i or above i; ``subtree``
    (n,) the number of joints each joint moves, itself included;
    ``detached`` (m,) the joints that do not inherit (parent >= 0 only);
    ``lever`` (n, n) int, ``lever[k, j]``: the first joint strictly below j on the path
    to k that does not inherit (-1: none), through whose head joint j moves points on k.
    """

    parent: np.ndarray
    prismatic: np.ndarray
    axis: np.ndarray
    rest: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    mobility: np.ndarray
    base: np.ndarray = field(default_factory=lambda: np.eye(4))
    inherits: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.parent)
        parent = np.asarray(self.parent, dtype=np.intp)
        if np.any(parent >= np.arange(n)) or np.any(parent < -1):
            raise ValueError("joints must be ordered parents first (parent[i] < i)")
        axis = np.asarray(self.axis, dtype=float).reshape(n, 3)
        norms = np.linalg.norm(axis, axis=1)
        if np.any(norms < 1e-12):
            raise ValueError("every joint needs a non-zero axis")
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "prismatic", np.asarray(self.prismatic, dtype=bool).reshape(n))
        object.__setattr__(self, "axis", axis / norms[:, None])
        object.__setattr__(self, "rest", np.asarray(self.rest, dtype=float).reshape(n, 4, 4))
        for name in ("lower", "upper", "mobility"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float).reshape(n))
        object.__setattr__(self, "base", np.asarray(self.base, dtype=float).reshape(4, 4))
        inherits = np.ones(n, dtype=bool) if self.inherits is None else np.asarray(self.inherits, dtype=bool)
        object.__setattr__(self, "inherits", inherits.reshape(n).copy())
        detached = ~self.inherits & (parent >= 0)  # a root's parent frame is the base anyway
        object.__setattr__(self, "detached", np.flatnonzero(detached))

        depth = np.zeros(n, dtype=np.intp)
        ancestors = np.zeros((n, n), dtype=bool)  # ancestors[i, j]: j is i or above i
        lever = np.full((n, n), -1, dtype=np.intp)
        # Mirroring frames flip the cross product: +-1 per joint, from the fixed transforms.
        flips = np.sign(np.linalg.det(self.rest[:, :3, :3])) if n else np.zeros(0)
        handedness = np.empty(n)
        base_flip = float(np.sign(np.linalg.det(self.base[:3, :3])))
        for i in range(n):
            p = parent[i]
            if p >= 0:
                depth[i] = depth[p] + 1
                ancestors[i] = ancestors[p]
                lever[i] = lever[p]
                if detached[i]:
                    lever[i, ancestors[p] & (lever[p] < 0)] = i
                    handedness[i] = base_flip * flips[i]
                else:
                    handedness[i] = handedness[p] * flips[i]
            else:
                handedness[i] = base_flip * flips[i]
            ancestors[i, i] = True
        levels = [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=-1)) + 1)]
        object.__setattr__(self, "ancestors", ancestors)
        object.__setattr__(self, "subtree", ancestors.sum(axis=0))  # joints each joint moves, itself included
        object.__setattr__(self, "lever", lever)
        object.__setattr__(self, "levels", levels)
        # Forward kinematics by pointer jumping: slot n holds the base frame, slot n + 1
        # the identity. Each round composes every frame with the partial product of the
        # joint its pointer names and doubles the pointer, so a tree of depth d takes
        # ceil(log2(d + 2)) batched products instead of d. A non-inheriting joint h starts
        # a product of its own, from [[B R_h, 0], [0, 1]] (slot n + 1): that gives G_k with
        # F_k = T(x_h) G_k for every k whose nearest non-inheriting ancestor-or-self is h.
        pointer = np.concatenate([np.where(parent < 0, n, parent), [n + 1, n + 1]])
        pointer[self.detached] = n + 1
        rounds = []
        while np.any(pointer[: n + 1] != n + 1):
            rounds.append(pointer)
            pointer = pointer[pointer]
        object.__setattr__(self, "_rounds", rounds)
        d = self.detached
        fk_rest = self.rest.copy()
        fk_rest[d, :3, :3] = self.base[:3, :3] @ self.rest[d, :3, :3]
        fk_rest[d, :3, 3] = 0.0
        # The local transform of joint i is fk_rest_i @ M_i(q_i). With Rodrigues' formula
        # M = I + sin q K + (1 - cos q) K^2 (K the axis' cross-product matrix), its linear
        # part is R0 + sin q (R0 K) + (1 - cos q) (R0 K^2), and a slide adds q (R0 a) to the
        # offset: both products are fixed, so a forward pass needs no per-joint matrices.
        object.__setattr__(self, "_fk_rest", fk_rest)
        turning = np.where(self.prismatic[:, None, None], 0.0, _skew(self.axis))
        linear0 = fk_rest[:, :3, :3]
        terms = np.zeros((3, n, 4, 4))  # what sin q, 1 - cos q and q add to each local transform, flat
        terms[0, :, :3, :3], terms[1, :, :3, :3] = linear0 @ turning, linear0 @ turning @ turning
        terms[2, :, :3, 3] = np.where(self.prismatic[:, None], np.einsum("nij,nj->ni", linear0, self.axis), 0.0)
        object.__setattr__(self, "_revolute", (~self.prismatic).astype(float))
        stack = np.zeros((n + 2, 4, 4))
        stack[:n] = fk_rest
        stack[n] = self.base
        stack[n + 1] = np.eye(4)
        object.__setattr__(self, "_fk_stack", stack)
        # Per joint (n, 4, 16): the rows sin q, 1 - cos q, q and 1 take of the flat local
        # transform, so that every joint's transform is one small product (``_locals``).
        object.__setattr__(self, "_fk_rows", np.ascontiguousarray(
            np.concatenate([terms.reshape(3, n, 16), fk_rest.reshape(1, n, 16)]).transpose(1, 0, 2)))
        object.__setattr__(self, "_kept", {})
        # Heads: x_h = sum of g_h' = G_parent(h') @ [t_h'; 1] over the non-inheriting
        # ancestors-or-self h' of h; joint k is shifted by the head of its nearest
        # non-inheriting ancestor-or-self, so all shifts are one product ``_shift @ g``.
        nearest = np.zeros((n, len(d)))
        for i in range(n):
            if detached[i]:
                nearest[i, np.searchsorted(d, i)] = 1.0
            elif parent[i] >= 0:
                nearest[i] = nearest[parent[i]]
        object.__setattr__(self, "_shift", nearest @ ancestors[np.ix_(d, d)])
        offsets = np.ones((len(d), 4, 1))
        offsets[:, :3, 0] = self.rest[d, :3, 3]
        object.__setattr__(self, "_head_offsets", offsets)
        # With rotations and uniform scales only, a hinge's Jacobian column is simply
        # unit(world axis) x (p - o); shears or non-uniform scales need the general form.
        linear = np.concatenate([self.rest[:, :3, :3], self.base[None, :3, :3]])
        gram = np.einsum("kji,kjl->kil", linear, linear)
        scale2 = np.trace(gram, axis1=1, axis2=2)[:, None, None] / 3.0
        # Blender's 32-bit matrices are orthogonal only to ~1e-6; a Jacobian that far off
        # changes the steps, never the solution (the residuals stay exact).
        object.__setattr__(self, "conformal", bool(np.allclose(gram, scale2 * np.eye(3), rtol=0.0,
                                                               atol=1e-4 * float(scale2.max(initial=1.0)))))
        object.__setattr__(self, "handedness", handedness)

    @property
    def size(self) -> int:
        return len(self.parent)

    def clamp(self, q: np.ndarray) -> np.ndarray:
        """Joint values clipped to their limits."""
        return np.clip(q, self.lower, self.upper)

    def forward(self, q: np.ndarray) -> Kinematics:
        """Frames of every joint for joint values ``q`` (n,).

        The last few results are kept: a solve evaluates the same configuration several
        times (its start, the stage checks, the step it accepts), and the answer is a pure
        function of ``q``. Kept results are read-only, so nobody changes a shared one."""
        q = np.array(q, dtype=float)  # a copy: the caller may change its array afterwards
        key = q.tobytes()
        kept = self._kept.get(key)
        if kept is not None:
            return kept
        kin = self._forward(q)
        q.flags.writeable = False
        kin.frames.flags.writeable = False
        if len(self._kept) >= _KEPT:
            del self._kept[next(iter(self._kept))]
        self._kept[key] = kin
        return kin

    def _forward(self, q: np.ndarray) -> Kinematics:
        n = self.size
        stack = np.empty_like(self._fk_stack)
        stack[:n] = self._locals(q)
        stack[n:] = self._fk_stack[n:]
        for pointer in self._rounds:
            stack = stack[pointer] @ stack
        frames = stack[:n]
        self._shift_detached(frames)
        return Kinematics(self, q, frames)

    def forward_frames(self, q: np.ndarray) -> np.ndarray:
        """The frames (F, n, 4, 4) of every joint for ``F`` configurations ``q`` (F, n) at once:
        ``_forward`` with a leading frame axis, by depth level (``frames_by_level``: with many
        frames, each joint's product once beats pointer jumping's fewer, larger rounds)."""
        frames = frames_by_level(self, np.asarray(q, dtype=float))
        self._shift_detached(frames)
        return frames

    def _locals(self, q: np.ndarray, joints=slice(None)) -> np.ndarray:
        """The local transforms (..., k, 4, 4) of ``joints``: each one's fixed transform times its
        motion by ``q`` (..., k), as the fixed transform plus the motion's three terms."""
        turn = q * self._revolute[joints]
        motion = np.stack([np.sin(turn), 1.0 - np.cos(turn), q, np.ones_like(q)], axis=-1)  # (..., k, 4)
        return (motion[..., None, :] @ self._fk_rows[joints])[..., 0, :].reshape(*q.shape, 4, 4)

    def _shift_detached(self, frames: np.ndarray) -> None:
        """F_k = T(x_h) G_k: each detached subtree of ``frames`` (..., n, 4, 4) shifted to its
        head, in place."""
        d = self.detached
        if d.size:
            g = (frames[..., self.parent[d], :3, :] @ self._head_offsets)[..., 0]
            frames[..., :3, 3] += self._shift @ g

    def heads_of(self, frames: np.ndarray) -> np.ndarray:
        """Each joint's origin before its own motion, F_parent(i) @ [t_i; 1] (..., n, 3), of
        ``frames`` (..., n, 4, 4) (``Kinematics.heads``; ``forward_frames``' with a frame axis)."""
        base = np.broadcast_to(self.base, frames.shape[:-3] + (1, 4, 4))  # -1: the base
        parents = np.concatenate([frames, base], axis=-3)[..., self.parent, :, :]
        return np.einsum("...nij,nj->...ni", parents[..., :3, :3], self.rest[:, :3, 3]) + parents[..., :3, 3]


def _level_plan(sk: Skeleton) -> tuple:
    """(order, back, steps), once per skeleton: the joints by depth, each level's joints whose
    parent frame is the base, the identity (not inheriting) or a joint's next to each other in
    that order; each joint's place in it (both None where the joints are numbered so already,
    ``level_order``); each level's three runs as slices (None where empty) and the places of
    the third's parents."""
    plan = sk.__dict__.get("_by_level")
    if plan is None:
        parent, detached = sk.parent, np.zeros(sk.size, dtype=bool)
        detached[sk.detached] = True
        order, back, steps = [], np.empty(sk.size, dtype=np.intp), []
        for level in sk.levels:
            runs = [level[parent[level] < 0], level[(parent[level] >= 0) & detached[level]],
                    level[(parent[level] >= 0) & ~detached[level]]]
            slices = []
            for run in runs:
                back[run] = np.arange(len(order), len(order) + len(run))
                slices.append(slice(len(order), len(order) + len(run)) if len(run) else None)
                order += run.tolist()
            steps.append((*slices, back[parent[runs[2]]]))
        order = np.array(order, dtype=np.intp)
        plan = (None, None, steps) if np.array_equal(order, np.arange(sk.size)) else (order, back, steps)
        object.__setattr__(sk, "_by_level", plan)
    return plan


def level_order(sk: Skeleton) -> np.ndarray:
    """The joints in the order ``frames_by_level`` works on them: a tree numbered so (``subset``
    of the joints in this order) skips its two reorderings."""
    order = _level_plan(sk)[0]
    return np.arange(sk.size) if order is None else order


def frames_by_level(sk: Skeleton, q: np.ndarray) -> np.ndarray:
    """World frames (F, n, 4, 4) of joint values ``q`` (F, n), a depth level at a time: a root's
    parent frame is the base, a joint that does not inherit starts from the identity (its head
    is shifted on afterwards, ``Skeleton._shift_detached``). The joints are worked on in depth
    order (``_level_plan``), so each level reads and writes runs of the arrays, not scattered
    joints."""
    order, back, steps = _level_plan(sk)
    local = sk._locals(q) if order is None else sk._locals(q[:, order], order)
    frames = np.empty_like(local)
    for top, free, inner, parents in steps:
        if top is not None:
            np.matmul(sk.base, local[:, top], out=frames[:, top])
        if free is not None:
            frames[:, free] = local[:, free]
        if inner is not None:
            np.matmul(frames[:, parents], local[:, inner], out=frames[:, inner])
    return frames if back is None else frames[:, back]


def subset(skeleton: Skeleton, keep: np.ndarray) -> Skeleton:
    """The tree of the joints ``keep`` of ``skeleton`` (ascending, every one's parent among them
    or -1), numbered in that order."""
    sk = skeleton
    keep = np.asarray(keep, dtype=np.intp)
    index = np.full(sk.size + 1, -1, dtype=np.intp)  # (the last: a root's parent)
    index[keep] = np.arange(keep.size)
    parent = index[sk.parent[keep]]
    if np.any((parent < 0) & (sk.parent[keep] >= 0)):
        raise ValueError("a subset of a tree keeps every joint's parent")
    return Skeleton(parent=parent, prismatic=sk.prismatic[keep], axis=sk.axis[keep], rest=sk.rest[keep],
                    lower=sk.lower[keep], upper=sk.upper[keep], mobility=sk.mobility[keep], base=sk.base,
                    inherits=sk.inherits[keep])


class Kinematics:
    """The skeleton evaluated at one configuration: joint frames and Jacobians of points."""

    def __init__(self, skeleton: Skeleton, q: np.ndarray, frames: np.ndarray):
        self.skeleton = skeleton
        self.q = q
        self.frames = frames  # (n, 4, 4) world frame of each joint after its motion
        self._axes = None
        self._signed_unit_axes = None
        self._linear_inverse = None
        self._heads = None

    @property
    def origins(self) -> np.ndarray:
        """World position of each joint (n, 3)."""
        return self.frames[:, :3, 3]

    @property
    def world_axes(self) -> np.ndarray:
        """Each joint's axis in world space (n, 3); not normalised under a scaled frame."""
        if self._axes is None:
            self._axes = (self.frames[:, :3, :3] @ self.skeleton.axis[:, :, None])[:, :, 0]
        return self._axes

    @property
    def heads(self) -> np.ndarray:
        """Each joint's origin before its own motion, F_parent(i) @ [t_i; 1] (n, 3): where a
        non-inheriting joint's head rides on its parent."""
        if self._heads is None:
            self._heads = self.skeleton.heads_of(self.frames)
        return self._heads

    def lever_points(self, joints: np.ndarray, points: np.ndarray) -> np.ndarray:
        """(k, n, 3): the point through which each joint j moves world ``points`` (k, 3)
        riding on ``joints`` (k,): the head of ``skeleton.lever[joint, j]`` if there is
        one (below it only translation is passed on), else the point itself."""
        sk = self.skeleton
        if not sk.detached.size:
            return np.broadcast_to(points[:, None, :], (len(points), sk.size, 3))
        lever = sk.lever[joints]
        return np.where((lever >= 0)[:, :, None], self.heads[lever], points[:, None, :])

    def points(self, joints: np.ndarray, local: np.ndarray) -> np.ndarray:
        """World positions (k, 3) of points ``local`` (k, 3) fixed in the frames of ``joints`` (k,)."""
        f = self.frames[joints]
        return (f[:, :3, :3] @ local[:, :, None])[:, :, 0] + f[:, :3, 3]

    def point_jacobian(self, joints: np.ndarray, points: np.ndarray) -> np.ndarray:
        """d(point)/dq (k, 3, n) for world ``points`` (k, 3) riding on ``joints`` (k,).

        Revolute column: A (a x A^-1 (x - o)), which is the familiar (A a) x (x - o)
        when the frame's linear part A is a rotation; prismatic column: A a. Here x is
        the point p itself, or, when a non-inheriting joint h lies between the joint and
        the point, h's head (``lever_points``): below h the rotation only translates.
        """
        sk = self.skeleton
        if not sk.conformal:
            rel = self.lever_points(joints, points) - self.origins[None, :, :]  # (k, n, 3)
            linear = self.frames[:, :3, :3]
            if self._linear_inverse is None:
                self._linear_inverse = np.linalg.inv(linear)
            rel_local = np.einsum("nij,knj->kni", self._linear_inverse, rel)
            cols = np.einsum("nij,knj->kni", linear, cross(sk.axis[None], rel_local))
            cols[:, sk.prismatic] = self.world_axes[sk.prismatic]
            cols *= sk.ancestors[joints][:, :, None]  # only joints above a point move it
            return cols.transpose(0, 2, 1)
        if self._signed_unit_axes is None:
            axes = self.world_axes
            self._signed_unit_axes = axes * (sk.handedness / np.sqrt(np.einsum("ij,ij->i", axes, axes)))[:, None]
        ax, ay, az = self._signed_unit_axes.T
        origins = self.origins
        if sk.detached.size:
            rel = self.lever_points(joints, points) - origins[None, :, :]
            rx, ry, rz = rel[..., 0], rel[..., 1], rel[..., 2]
        else:  # (k, n) each: written straight into the (k, 3, n) layout
            rx = points[:, 0, None] - origins[:, 0]
            ry = points[:, 1, None] - origins[:, 1]
            rz = points[:, 2, None] - origins[:, 2]
        cols = np.empty((len(points), 3, sk.size))
        cols[:, 0] = ay * rz - az * ry
        cols[:, 1] = az * rx - ax * rz
        cols[:, 2] = ax * ry - ay * rx
        if sk.prismatic.any():
            cols[:, :, sk.prismatic] = self.world_axes[sk.prismatic].T
        cols *= sk.ancestors[joints][:, None, :]  # only joints above a point move it
        return cols

    def size_scale(self, extra_points: np.ndarray | None = None) -> float:
        """A characteristic length [m] of the posed tree: the diagonal of its bounding box."""
        pts = self.origins if extra_points is None else np.vstack([self.origins, extra_points])
        span = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0))) if len(pts) else 0.0
        return span if span > 1e-12 else 1.0
