"""The target's pose lined up with the source's, frame by frame, before any goal is solved:
each mapped bone's world rotation (``core.anatomy.alignment.line_up``: from what is the same
under any rest, the source's joints' places and its bones' turns) and, for the bones its
chains carry from the hips, where each joint's head is from the hips' head when the target's
bones turn so (its own proportions, the source's angles). The retarget's goals are this pose's
places and turns: the limbs bend as the source's, and the IK only corrects what the two
bodies' proportions and the plants ask of it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.anatomy import alignment
from ...core.anatomy.retarget import retarget_roles
from ...core.ranges import SphericalRanges
from ..rig.body import world_scale
from ..rig.model import chain_to_root
from ..rig.retarget_map import bone_tree

CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")
_LOWER = {"thigh": "shin", "upper_arm": "forearm"}
TRUNK = ("spine", "chest", "neck", "head", "clavicle")  # the roles of the trunk's joints
ACROSS = np.radians(45.0)  # a bone further than this off the joints it carries lies across them  # an upper limb bone's role -> its lower one's


class LinedUp(NamedTuple):
    """``turns``: line index -> (frames, 3, 3) its target bone's world rotation; ``offsets``:
    target bone -> (frames, 3) its head from the hips' head, for the bones the hips carry;
    ``reference``: the frame (index) the two were lined up on."""

    turns: dict
    offsets: dict
    reference: int


def measured_bone(obj, name: str) -> str:
    """The bone whose evaluated pose shows the body part ``name`` controls: a generated Rigify
    rig's deforming bone for its FK or IK control ('DEF-thigh.L' for 'thigh_fk.L'), else
    ``name`` itself."""
    base = name.replace("_fk", "").replace("_ik", "")
    deforming = f"DEF-{base}"
    return deforming if deforming in obj.data.bones and deforming != name else name


def carried_by(target, names: list[str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(turned, moved): name -> the others of ``names`` that turn it when they turn, and name ->
    those that move its head, as Blender evaluates the rig (constraints and drivers included:
    a generated Rigify rig's shoulders follow its chest control though their parents lead to
    its torso, and its head goes where its chest puts its neck though it keeps its own turn).
    Each bone is turned a little in turn, the pose evaluated, and put back as it was."""
    import bpy
    from mathutils import Matrix

    pose_bones = target.pose.bones
    index = {name: k for k, name in enumerate(pose_bones.keys())}
    rows = [index[n] for n in names]
    flat = np.empty(len(pose_bones) * 16, np.float32)

    def read() -> tuple[np.ndarray, np.ndarray]:
        bpy.context.view_layer.update()
        pose_bones.foreach_get("matrix", flat)
        m = flat.reshape(-1, 4, 4)[rows]  # (column by column: the head is the last row)
        return m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=1, keepdims=True), m[:, 3, :3].astype(float)

    before, heads = read()
    reach = max(float(np.ptp(heads, axis=0).max()), 1e-6) if len(heads) else 1.0
    turned: dict[str, set[str]] = {name: set() for name in names}
    moved: dict[str, set[str]] = {name: set() for name in names}
    for k, name in enumerate(names):
        pb = pose_bones[name]
        kept = [(path, tuple(getattr(pb, path))) for path in CHANNELS]  # exactly as they were
        pb.matrix_basis = pb.matrix_basis @ Matrix.Rotation(0.3, 4, "X") @ Matrix.Rotation(0.3, 4, "Z")
        try:
            after, placed = read()
        finally:
            for path, values in kept:
                setattr(pb, path, values)
        turns = alignment.rotation_angles(np.swapaxes(before, -1, -2) @ after) > 1e-3
        goes = np.linalg.norm(placed - heads, axis=1) > 1e-4 * reach
        for j in range(len(names)):
            if j != k and turns[j]:
                turned[names[j]].add(name)
            if j != k and goes[j]:
                moved[names[j]].add(name)
    read()
    return turned, moved


def body_bones(roles: dict) -> tuple[str, str, str]:
    """(left thigh, right thigh, top of the trunk: the neck, else the head, else a spine bone)
    of a skeleton by its roles; '' for what it lacks."""
    def first(*wanted):
        return next((n for role in wanted for n, r in roles.items() if r == role), "")
    return first("thigh.L"), first("thigh.R"), first("neck", "head", "chest", "spine")


def body_frames(heads: np.ndarray) -> np.ndarray:
    """(..., 3, 3) a body's frame from its (left hip, right hip, top of the trunk) heads
    (..., 3, 3): across the hips first, then up the trunk."""
    left, right, top = heads[..., 0, :], heads[..., 1, :], heads[..., 2, :]
    return alignment.frames_from(left - right, top - (left + right) / 2.0)


def _flat_foot(source: np.ndarray, ankle: np.ndarray, toe: np.ndarray, rest: np.ndarray,
               rest_toe: np.ndarray) -> np.ndarray:
    """A foot's world rotations (frames, 3, 3) lined up where the source's foot is flattest on
    the ground (its ankle and toe, ``ankle`` + ``toe``, least above their lowest): there the
    target's foot stands as in its rest, flat on its floor, only turned about the vertical to
    head where the source's heads; every other frame turns from there as the source's foot
    (``source``). A foot's pitch in the two rests says nothing of the floor: a source whose
    foot bone points lower than the target's would otherwise plant its toes through it."""
    heights = ankle[:, 2] - ankle[:, 2].min() + (ankle + toe)[:, 2] - (ankle + toe)[:, 2].min()
    flat = int(np.argmin(heights))
    heading = np.arctan2(toe[flat, 1], toe[flat, 0]) - np.arctan2(rest_toe[1], rest_toe[0])
    if np.hypot(*toe[flat, :2]) < 1e-9 or np.hypot(*rest_toe[:2]) < 1e-9:
        heading = 0.0
    lined = alignment.along(np.array([0.0, 0.0, 1.0]), heading) @ rest
    return source @ np.swapaxes(source[flat], -1, -2) @ lined


def _across(lined: np.ndarray, n: int, kids: list, rest: np.ndarray, segments_t: np.ndarray,
            segments_s: np.ndarray) -> None:
    """The lined-up turn of a bone lying across the joints it carries (a Rigify chest control,
    under the shoulders) made whole from them, where two of them point apart (the clavicles): the
    frame of (the line between their directions, its way to them) on the source turned onto the
    target's. A way alone leaves its turn about the way to the source's own bone, whose axes say
    nothing of the target's. ``rest``: the bone's rest rotation; ``segments_*``: every lined bone's
    way, the target's (rest) and the source's."""
    ways_t = alignment.normalized(segments_t[kids])
    cos = ways_t @ ways_t.T
    a, b = np.unravel_index(int(np.argmin(cos)), cos.shape)
    side_t = ways_t[a] - ways_t[b]
    if np.linalg.norm(side_t) < 1.0 or abs(np.dot(alignment.normalized(side_t),
                                                  alignment.normalized(segments_t[n]))) > np.cos(np.radians(60.0)):
        return  # they do not point apart across its way
    ways_s = alignment.normalized(segments_s[:, kids])
    frame_t = alignment.frames_from(side_t, segments_t[n])
    frame_s = alignment.frames_from(ways_s[:, a] - ways_s[:, b], segments_s[:, n])
    lined[:, n] = frame_s @ frame_t.T @ rest


def line_up(retarget, target_heads: dict, heads: np.ndarray, rotations: np.ndarray, column: dict,
            body_s: tuple, body_t: tuple) -> LinedUp:
    """The lined-up pose of ``retarget``'s turned lines. ``target_heads``: every target bone's
    rest head (world); ``heads``, ``rotations``: the sampled source bones' on every frame, at
    ``column``; ``body_*``: each side's ``body_bones``."""
    lines = retarget.lines
    pose_bones = retarget.target.pose.bones
    turned = {}
    for i, line in enumerate(lines):  # each target bone once, parents first
        if line.turn and line.target not in turned:
            turned[line.target] = i
    movers, placers = carried_by(retarget.target, list(turned))
    order = sorted(turned.values(), key=lambda i: (len(movers[lines[i].target]),
                                                    len(chain_to_root(pose_bones[lines[i].target]))))
    names = [lines[i].target for i in order]
    place = {name: n for n, name in enumerate(names)}
    carriers = np.full(len(order), -1)
    for n, name in enumerate(names):
        if movers[name]:  # the nearest: the one the others that move it move too
            carriers[n] = place[max(movers[name], key=lambda m: (len(movers[m]), place[m]))]
    retarget.carriers = {name: (names[c] if c >= 0 else None) for name, c in zip(names, carriers)}
    children = {n: [m for m in range(len(order)) if carriers[m] == n] for n in range(len(order))}
    rest = np.array([retarget.rest[name][:3, :3] / np.linalg.norm(retarget.rest[name][:3, :3], axis=0)
                     for name in names])
    source = rotations[:, [column[lines[i].source] for i in order]]
    segments_t = rest[:, :, 1].copy()  # along each bone, unless it leads to one paired joint
    segments_s = source[..., :, 1].copy()
    target = retarget.target
    roles = retarget_roles(*bone_tree(retarget.source))[1]
    across = {}  # a bone lying across the joints it carries -> those joints (``children`` of it)
    joined = set()  # the bones whose source segment leads to the one joint they carry
    for n, i in enumerate(order):
        kids = [m for m in children[n] if lines[order[m]].source != lines[i].source]
        twin = measured_bone(target, names[n])
        if twin != names[n]:  # a control: the bone it moves lies along the body part (a Rigify foot_ik points back)
            m = np.array(target.matrix_world, dtype=float)[:3, :3] @ np.array(target.data.bones[twin].matrix_local,
                                                                                dtype=float)[:3, :3]
            segments_t[n] = m[:, 1]
        if len(kids) == 1:
            joined.add(n)
            child = lines[order[kids[0]]]
            segments_t[n] = target_heads[child.target] - target_heads[lines[i].target]
            segments_s[:, n] = heads[:, column[child.source]] - heads[:, column[lines[i].source]]
        trunk = [m for m in kids if roles.get(lines[order[m]].source, "").startswith(TRUNK)]
        if len(kids) != 1 and trunk:  # toward the middle of the trunk's joints it carries, lying across them (a Rigify chest)
            kids = trunk
            toward = np.mean([target_heads[lines[order[m]].target] for m in kids], axis=0) - target_heads[names[n]]
            if np.dot(alignment.normalized(segments_t[n]), alignment.normalized(toward)) < np.cos(ACROSS):
                segments_t[n] = toward
                segments_s[:, n] = (np.mean([heads[:, column[lines[order[m]].source]] for m in kids], axis=0)
                                    - heads[:, column[lines[i].source]])
                across[n] = kids
    hips = retarget.hips()
    hips_source = lines[hips].source if hips is not None else None
    swung = np.array([lines[i].source != hips_source for i in order])
    if all(body_s) and all(body_t):
        frame_s = body_frames(heads[:, [column[b] for b in body_s]])
        frame_t = body_frames(np.array([target_heads[b] for b in body_t]))
    else:  # no body to read: the two rests are taken to face alike
        frame_s, frame_t = np.broadcast_to(np.eye(3), (len(heads), 3, 3)), np.eye(3)
    reference = alignment.reference_frame(segments_s[:, swung], segments_t[swung], frame_s, frame_t)
    hinges = {}
    for n, i in enumerate(order):
        part, _, side = roles.get(lines[i].source, "").partition(".")
        lower = next((m for m in children[n] if part in _LOWER
                      and roles.get(lines[order[m]].source) == f"{_LOWER[part]}.{side}"), None)
        if lower is None:
            continue
        bend = np.cross(alignment.normalized(segments_t[n]), alignment.normalized(segments_t[lower]))
        # The target's hinge: the axis its rest bends about, or (a straight rest) its lower bone's X axis.
        hinges[n] = (lower, bend if np.linalg.norm(bend) > np.sin(np.radians(3.0)) else rest[lower][:, 0])
    body = frame_s[reference] @ frame_t.T
    lined = alignment.line_up(source, segments_s, rest, segments_t, carriers, swung, body, hinges, reference)
    scale_s = world_scale(retarget.source)
    for n, i in enumerate(order):
        if roles.get(lines[i].source, "").startswith("foot."):
            toe = segments_s[:, n]
            if n not in joined:  # along the foot bone: as far as it is long (a unit axis would find its flattest
                # frame where it points lowest)
                toe = toe * retarget.source.data.bones[lines[i].source].length * scale_s
            lined[:, n] = _flat_foot(source[:, n], heads[:, column[lines[i].source]], toe, rest[n], segments_t[n])
    for n, kids in across.items():
        _across(lined, n, kids, rest[n], segments_t, segments_s)
    turns = {j: lined[:, place[line.target]] for j, line in enumerate(lines) if line.turn}
    # Forward kinematics from the hips: each head where the turn of the nearest bone that moves
    # it puts its rest offset (its carrier, or a bone that moves it without turning it: a
    # Rigify head's chest).
    offsets = {}
    hips_target = lines[hips].target if hips is not None else None
    for n, name in enumerate(names):
        near = [m for m in placers[name] if m in place]
        c = place[max(near, key=lambda m: (len(placers[m]), place[m]))] if near else -1
        if name == hips_target:
            offsets[name] = np.zeros((len(heads), 3))
        elif c >= 0 and names[c] in offsets:
            local = rest[c].T @ (target_heads[name] - target_heads[names[c]])
            offsets[name] = offsets[names[c]] + lined[:, c] @ local
    return LinedUp(turns, offsets, reference)


def matrix_quaternions(r: np.ndarray) -> np.ndarray:
    """Unit quaternions (frames, 4) (w, x, y, z) of rotations (frames, 3, 3), each on the side
    of the last frame's (no sign flip from one frame to the next)."""
    w = np.sqrt(np.maximum(0.0, 1.0 + r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2])) / 2.0
    x = np.sqrt(np.maximum(0.0, 1.0 + r[:, 0, 0] - r[:, 1, 1] - r[:, 2, 2])) / 2.0
    y = np.sqrt(np.maximum(0.0, 1.0 - r[:, 0, 0] + r[:, 1, 1] - r[:, 2, 2])) / 2.0
    z = np.sqrt(np.maximum(0.0, 1.0 - r[:, 0, 0] - r[:, 1, 1] + r[:, 2, 2])) / 2.0
    x = np.copysign(x, r[:, 2, 1] - r[:, 1, 2])
    y = np.copysign(y, r[:, 0, 2] - r[:, 2, 0])
    z = np.copysign(z, r[:, 1, 0] - r[:, 0, 1])
    q = np.stack([w, x, y, z], axis=1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    flips = np.concatenate([[1.0], np.sign(np.einsum("fi,fi->f", q[1:], q[:-1]) + 1e-300)])
    return q * np.cumprod(flips)[:, None]


def _in_range(pose_bone, basis: np.ndarray) -> np.ndarray:
    """The channel turns ``basis`` (frames, 3, 3) of ``pose_bone`` moved into its joint range
    (``welman_ik_range``), where it uses one."""
    r = getattr(pose_bone, "welman_ik_range", None)
    if r is None or not r.use:
        return basis
    count = len(basis)
    ranges = SphericalRanges(np.zeros((count, 3)), np.tile((r.swing_x_min, r.swing_x_max), (count, 1)),
                             np.tile((r.swing_z_min, r.swing_z_max), (count, 1)),
                             np.tile((r.twist_min, r.twist_max), (count, 1)), np.full(count, r.roll))
    return ranges.clamp(basis)


def channels(retarget, frames_count: int) -> dict[str, tuple[str, np.ndarray, np.ndarray | None]]:
    """bone -> (rotation data path, (frames, n) rotation values, (frames, 3) location or None):
    the lined-up pose (``retarget.turns``, the hips' and the translating bones' places) as each
    mapped bone's own channels, every bone between them at rest. A bone's channel turn is its
    turn from its nearest turned ancestor's, as the two rest: Bᵀ Rc Aᶜᵀ A (B, Rc its and the
    ancestor's rest rotations, Aᶜ, A their turns); a bone without one turns from its rest.
    Constraints and drivers are not followed: this is the pose the solve starts from and keeps
    near, not its result."""
    from ..rig.rotations import matrix_eulers, order_axes

    target, lines = retarget.target, retarget.lines
    pose_bones = target.pose.bones
    world = np.array(target.matrix_world, dtype=float)
    turned = {}
    for i, line in enumerate(lines):
        if line.turn and line.target not in turned:
            turned[line.target] = retarget.turns[i]
    placed = {line.target: retarget.places[i] for i, line in enumerate(lines) if line.place and i in retarget.places}
    moving = retarget.translating() | {line.target for line in lines
                                       if line.place and pose_bones[line.target].parent is None}

    def rest_rotation(name):
        m = world[:3, :3] @ np.array(target.data.bones[name].matrix_local, dtype=float)[:3, :3]
        return m / np.linalg.norm(m, axis=0)

    out = {}
    for name in retarget.carriers:  # every turned bone, carriers first (``line_up``)
        pb, turn = pose_bones[name], turned[name]
        rest = rest_rotation(name)
        carrier = retarget.carriers.get(name)
        if carrier is None:
            basis = rest.T @ turn
        else:
            basis = rest.T @ rest_rotation(carrier) @ np.swapaxes(turned[carrier], -1, -2) @ turn
        basis = _in_range(pb, basis)
        # Its turn as clamped, which its children's channels turn from.
        turned[name] = (rest if carrier is None else turned[carrier] @ rest_rotation(carrier).T @ rest) @ basis
        mode = pb.rotation_mode
        if mode == "QUATERNION":
            path, values = "rotation_quaternion", matrix_quaternions(basis)
        elif mode == "AXIS_ANGLE":
            q = matrix_quaternions(basis)
            angle = 2.0 * np.arctan2(np.linalg.norm(q[:, 1:], axis=1), q[:, 0])
            axis = q[:, 1:] / np.maximum(np.linalg.norm(q[:, 1:], axis=1, keepdims=True), 1e-12)
            axis[np.linalg.norm(q[:, 1:], axis=1) < 1e-12] = (0.0, 1.0, 0.0)
            path, values = "rotation_axis_angle", np.column_stack([angle, axis])
        else:
            axes = np.repeat(order_axes([mode]), frames_count, axis=0)
            eulers = matrix_eulers(basis, axes, np.zeros((frames_count, 3)))
            path, values = "rotation_euler", np.unwrap(eulers, axis=0)
        location = None
        if name in moving and name in placed:
            # From its rest head, along its rest axes, in the armature's units, where its parents
            # put it at rest: carried by a turned bone (a Rigify IK hand following the torso),
            # its place taken back by the carrier's lined-up turn and place.
            at = placed[name]
            if carrier is not None and carrier in retarget.heads:
                back = rest_rotation(carrier) @ np.swapaxes(turned[carrier], -1, -2)
                at = retarget.rest[carrier][:3, 3] + np.einsum("fij,fj->fi", back, at - retarget.heads[carrier])
            head = np.linalg.solve(world, np.column_stack([at, np.ones(frames_count)]).T).T[:, :3]
            bone = target.data.bones[name]
            local = np.array(bone.matrix_local, dtype=float)
            # Along its own rest axes, or its parent's where its location is not local (a
            # Rigify IK control's moves along its parent's axes).
            axes = local if bone.use_local_location or bone.parent is None else np.array(
                bone.parent.matrix_local, dtype=float)
            location = (head - local[:3, 3]) @ (axes[:3, :3] / np.linalg.norm(axes[:3, :3], axis=0) ** 2)
        out[name] = (path, values, location)
    return out
