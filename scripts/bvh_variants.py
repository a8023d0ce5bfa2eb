"""Variants of a BVH clip that move the same: another rest pose, other units, another up axis.

Every joint's world position on every frame is kept (times the unit scale, and turned by the
axis change), so a variant is the same motion written against another rest, for testing that
the add-on reads a clip the same whatever rest, units and up axis its file was written with.
Pure numpy (no bpy), usable from the command line and as a module::

    python scripts/bvh_variants.py tests/fixtures/pymo_walk.bvh /tmp/walk_apose.bvh --rest apose
    python scripts/bvh_variants.py tests/fixtures/pymo_walk.bvh /tmp/walk_m_z.bvh \\
        --source-units in --units m --up Z

Conventions (those of Blender's importer, ``io_anim_bvh``): a joint's channel rotation is
L = R_a·R_b·R_c for rotation channels listed a, b, c; its translation in its parent's frame is
its OFFSET, or, when it has position channels, the position channels (a missing one reads 0);
a joint's world rotation is R_j = R_parent·L_j and its world position x_j = x_parent + R_parent·t_j.
At rest (all channels zero, positions at their offsets) every world rotation is the identity.

The maths. A rest change turns each joint p's frame by a rotation S_p (a swing, no twist):

* every child offset of p (End Sites too) becomes S_p·o, and position channels of p's
  children become S_p·t;
* world rotations become R'_p = R_p·S_p⁻¹, so the channels become L'_j = S_parent·L_j·S_j⁻¹
  (a root: L'_root = L_root·S_root⁻¹, its position channels unchanged);

then x'_c = x'_p + R'_p·S_p·t_c = x_p + R_p·t_c = x_c on every frame. L' is read back as Euler
angles in the joint's own channel order, each frame's the nearest its previous frame's.

The rests (``--rest``), S_p = identity wherever not said otherwise:

* ``tpose``: the source's rest, unchanged;
* ``apose``: each arm, from the upper arm outward (upper arm, forearm, hand, fingers), turned
  by one swing that makes its upper arm point 45° below the horizontal, outward in the
  frontal plane (the XY plane of BVH's Y-up, Z-forward frame). For a T-posed source this is a
  45° turn down about the forward axis. The arms are found by their names (Hand/Wrist, then
  up past ForeArm/Elbow/LowerArm/twist joints to the upper arm);
* ``axis``: every joint with one child (a joint or an End Site) of non-zero length has its
  bone, the offset to that child, swung onto one axis (``--axis``, default +Y); the source's
  rest pose is prepended as frame 1 (the clip gets one frame more);
* ``stride``: every joint with one child of non-zero length takes as rest direction its
  bone's world direction on frame k (``--frame``, default the middle frame) with its root's
  rotation on that frame taken out: a rest posed mid-stride, standing as the source stands.

Units (``--units`` with ``--source-units``, or ``--scale``) multiply every offset and position
channel. ``--up Z`` conjugates the clip by G, the turn of +90° about X (+Y to +Z, +Z to -Y):
offsets G·o, positions G·t, rotations G·L·G⁻¹, so the clip stands Z-up in its own file
(facing -Y where the source faced +Z). :func:`import_axes` gives the importer's axes that
stand each variant as Blender stands the Y-up source.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from welman_ik.core.anatomy.alignment import swing  # (the repository on the path first)
from welman_ik.core.euler import euler_angles, euler_matrix

__all__ = ["euler_angles", "euler_matrix", "import_axes", "swing", "variant", "world_positions", "write_variant"]

RESTS = ("tpose", "apose", "axis", "stride")
UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "in": 0.0254, "ft": 0.3048}  # metres per unit
ROTATIONS = ("xrotation", "yrotation", "zrotation")
POSITIONS = ("xposition", "yposition", "zposition")
APOSE_DEGREES = 45.0
G_UP_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # +90° about X: +Y to +Z
TINY = 1e-9  # a bone shorter than this (file units) has no direction

# Arm roles from joint names (lower case, any "prefix:" cut off).
HAND = re.compile(r"hand|wrist")
FOREARM = re.compile(r"fore|lower|elbow|twist|roll")


@dataclass
class Clip:
    """A BVH file as read: joints in file order (a parent before its children) and the motion."""

    names: list[str]  # as written (words joined by one space)
    parents: list[int]  # -1 for a root
    offsets: np.ndarray  # (joints, 3) file units
    channels: list[list[str]]  # per joint, as written ("Zrotation", ...), in file order
    children: list[list[tuple[str, int]]]  # per joint, in file order: ("joint", j) or ("end", e)
    end_parents: list[int]  # per End Site, its joint
    end_offsets: np.ndarray  # (end sites, 3) file units
    frame_time: str  # as written
    motion: np.ndarray  # (frames, channels) as read: degrees and file units
    roots: list[int] = field(default_factory=list)

    def columns(self, joint: int) -> list[int]:
        """The motion columns of ``joint``'s channels."""
        first = sum(len(c) for c in self.channels[:joint])
        return list(range(first, first + len(self.channels[joint])))

    def rotation_order(self, joint: int) -> str:
        """``joint``'s rotation channels' axes in file order ("ZXY"), "" when it has none."""
        return "".join(c[0].upper() for c in self.channels[joint] if c.lower() in ROTATIONS)

    def bone(self, joint: int) -> np.ndarray | None:
        """The offset to ``joint``'s only child (a joint or an End Site), None unless it has
        exactly one."""
        if len(self.children[joint]) != 1:
            return None
        kind, index = self.children[joint][0]
        return self.offsets[index] if kind == "joint" else self.end_offsets[index]


# -- reading and writing ---------------------------------------------------------------------------


def parse(text: str) -> Clip:
    """The clip of a BVH file's ``text``; ValueError when it is none."""
    words = [line.split() for line in text.splitlines()]
    names, parents, offsets, channels, children, stack = [], [], [], [], [], []
    end_parents, end_offsets = [], []
    motion_at = None
    for i, w in enumerate(words):
        key = w[0].lower() if w else ""
        if key in ("root", "joint"):
            if len(w) < 2 or (stack and stack[-1][0] == "end"):
                raise ValueError(f"bad BVH hierarchy at line {i + 1}")
            if stack:
                children[stack[-1][1]].append(("joint", len(names)))
            names.append(" ".join(w[1:]))
            parents.append(stack[-1][1] if stack else -1)
            offsets.append((0.0, 0.0, 0.0))
            channels.append([])
            children.append([])
            stack.append(("joint", len(names) - 1))
        elif key == "end":
            if not stack or stack[-1][0] == "end":
                raise ValueError(f"bad BVH hierarchy: an End Site outside a joint at line {i + 1}")
            children[stack[-1][1]].append(("end", len(end_parents)))
            end_parents.append(stack[-1][1])
            end_offsets.append((0.0, 0.0, 0.0))
            stack.append(("end", len(end_parents) - 1))
        elif key == "}":
            if not stack:
                raise ValueError(f"bad BVH hierarchy: unbalanced '}}' at line {i + 1}")
            stack.pop()
        elif key == "offset" and stack:
            values = tuple(float(v) for v in w[1:4])
            if len(values) != 3:
                raise ValueError(f"bad BVH OFFSET at line {i + 1}")
            (offsets if stack[-1][0] == "joint" else end_offsets)[stack[-1][1]] = values
        elif key == "channels" and stack and stack[-1][0] == "joint":
            found = w[2:2 + int(w[1])]
            low = [c.lower() for c in found]
            if (len(found) != int(w[1]) or any(c not in ROTATIONS + POSITIONS for c in low)
                    or len(set(low)) != len(low) or len([c for c in low if c in ROTATIONS]) not in (0, 3)):
                raise ValueError(f"bad BVH CHANNELS at line {i + 1}: {' '.join(w)!r}")
            channels[stack[-1][1]] = found
        elif key == "motion":
            motion_at = i
            break
    if motion_at is None or stack or not names:
        raise ValueError("truncated BVH: no whole skeleton followed by a MOTION section")
    after = [i for i in range(motion_at + 1, len(words)) if words[i]]
    if (len(after) < 2 or words[after[0]][0].lower() != "frames:"
            or [v.lower() for v in words[after[1]][:2]] != ["frame", "time:"]):
        raise ValueError("truncated BVH: no 'Frames:' and 'Frame Time:' lines")
    count, width = int(words[after[0]][1]), sum(len(c) for c in channels)
    values = np.array([v for i in after[2:] for v in words[i]], dtype=float)
    if values.size < count * width:
        raise ValueError(f"truncated BVH motion: {values.size} values for {count} frames of {width} channels")
    return Clip(names, parents, np.array(offsets, dtype=float).reshape(-1, 3), channels, children,
                end_parents, np.array(end_offsets, dtype=float).reshape(-1, 3), words[after[1]][2],
                values[:count * width].reshape(count, width), [j for j, p in enumerate(parents) if p < 0])


def read(source) -> Clip:
    """The clip of a BVH file: a path, or the file's text."""
    if isinstance(source, str) and source.lstrip()[:9].upper() == "HIERARCHY":
        return parse(source)
    return parse(Path(source).read_text(encoding="utf-8", errors="surrogateescape"))


def format_clip(clip: Clip, digits: int = 6) -> str:
    """The BVH text of ``clip``, every number with ``digits`` decimals."""
    def number(v: float) -> str:
        text = f"{v:.{digits}f}"
        return f"{0.0:.{digits}f}" if float(text) == 0.0 else text  # never "-0.000000"

    def vector(v) -> str:
        return " ".join(number(x) for x in v)

    lines = ["HIERARCHY"]

    def joint(j: int, depth: int) -> None:
        pad = "\t" * depth
        lines.append(f"{pad}{'ROOT' if clip.parents[j] < 0 else 'JOINT'} {clip.names[j]}")
        lines.append(pad + "{")
        lines.append(f"{pad}\tOFFSET {vector(clip.offsets[j])}")
        lines.append(f"{pad}\tCHANNELS {len(clip.channels[j])}" + "".join(" " + c for c in clip.channels[j]))
        for kind, index in clip.children[j]:
            if kind == "joint":
                joint(index, depth + 1)
            else:
                lines.extend([f"{pad}\tEnd Site", f"{pad}\t{{",
                              f"{pad}\t\tOFFSET {vector(clip.end_offsets[index])}", f"{pad}\t}}"])
        lines.append(pad + "}")

    for root in clip.roots:
        joint(root, 0)
    lines += ["MOTION", f"Frames: {len(clip.motion)}", f"Frame Time: {clip.frame_time}"]
    lines += [vector(row) for row in clip.motion]
    return "\n".join(lines) + "\n"


# -- forward kinematics ----------------------------------------------------------------------------


def local_transforms(clip: Clip) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's channel rotation L (frames, joints, 3, 3) and translation in its parent's
    frame t (frames, joints, 3), file units."""
    frames, joints = len(clip.motion), len(clip.names)
    rotations = np.broadcast_to(np.eye(3), (frames, joints, 3, 3)).copy()
    translations = np.broadcast_to(clip.offsets, (frames, joints, 3)).copy()
    for j in range(joints):
        low = [c.lower() for c in clip.channels[j]]
        columns = clip.columns(j)
        turns = [col for col, c in zip(columns, low, strict=True) if c in ROTATIONS]
        if turns:
            rotations[:, j] = euler_matrix(np.radians(clip.motion[:, turns]), clip.rotation_order(j))
        moves = [(col, POSITIONS.index(c)) for col, c in zip(columns, low, strict=True) if c in POSITIONS]
        if moves:
            translations[:, j] = 0.0
            for col, axis in moves:
                translations[:, j, axis] = clip.motion[:, col]
    return rotations, translations


def forward(clip: Clip) -> tuple[np.ndarray, np.ndarray]:
    """World rotations (frames, joints, 3, 3) and world positions (frames, joints, 3) of every
    joint on every frame, file units."""
    local, t = local_transforms(clip)
    world, position = np.empty_like(local), np.empty_like(t)
    for j, p in enumerate(clip.parents):
        if p < 0:
            world[:, j], position[:, j] = local[:, j], t[:, j]
        else:
            world[:, j] = world[:, p] @ local[:, j]
            position[:, j] = position[:, p] + (world[:, p] @ t[:, j, :, None])[..., 0]
    return world, position


def world_positions(source, end_sites: bool = False) -> tuple[list[str], np.ndarray]:
    """Joint names and world positions (frames, joints, 3) in file units of a BVH file (a path
    or its text); with ``end_sites``, the End Sites follow the joints, named "<joint>/End Site"."""
    clip = source if isinstance(source, Clip) else read(source)
    world, position = forward(clip)
    names = list(clip.names)
    if end_sites and clip.end_parents:
        p = np.array(clip.end_parents)
        ends = position[:, p] + (world[:, p] @ clip.end_offsets[:, :, None])[..., 0]
        position = np.concatenate([position, ends], axis=1)
        names += [f"{clip.names[j]}/End Site" for j in clip.end_parents]
    return names, position


def rest_positions(clip: Clip) -> np.ndarray:
    """World positions (joints, 3) of the rest pose: every offset, the roots at theirs."""
    position = np.zeros((len(clip.names), 3))
    for j, p in enumerate(clip.parents):
        position[j] = clip.offsets[j] + (position[p] if p >= 0 else 0.0)
    return position


# -- the rests ----------------------------------------------------------------------------------------


def _role_name(name: str) -> str:
    """A joint's name as its role reads: lower case, any "prefix:" (``mixamorig:``) cut off."""
    return name.rsplit(":", 1)[-1].lower()


def arms(clip: Clip) -> list[int]:
    """The upper arm joints: for each hand (the first Hand/Wrist joint of its chain), the first
    ancestor above its forearm (ForeArm/Elbow/LowerArm and twist joints); the hand's grandparent
    when the names tell no more."""
    names = [_role_name(n) for n in clip.names]
    upper = []
    for j, name in enumerate(names):
        p = clip.parents[j]
        if not HAND.search(name) or p < 0 or HAND.search(names[p]):
            continue
        chain, a = [], p
        while a >= 0:
            chain.append(a)
            a = clip.parents[a]
        named = [a for a in chain[1:] if not FOREARM.search(names[a])]
        found = named[0] if named and FOREARM.search(names[p]) else (chain[1] if len(chain) > 1 else -1)
        if found >= 0 and clip.parents[found] >= 0 and found not in upper:
            upper.append(found)
    return upper


def _descendants(clip: Clip, joint: int) -> list[int]:
    """``joint`` and every joint under it, in file order (a parent comes before its children)."""
    out = [joint]
    for j in range(joint + 1, len(clip.names)):
        if clip.parents[j] in out:
            out.append(j)
    return out


def _toward(clip: Clip, joint: int, goal: int) -> int:
    """The child of ``joint`` on the way to its descendant ``goal``."""
    while clip.parents[goal] != joint:
        goal = clip.parents[goal]
    return goal


def rest_swings(clip: Clip, rest: str, axis=(0.0, 1.0, 0.0), frame: int | None = None) -> np.ndarray:
    """The swing S_p (joints, 3, 3) of every joint's frame for rest ``rest`` (see the module's
    docstring); a joint without rotation channels turns with its parent."""
    if rest not in RESTS:
        raise ValueError(f"unknown rest {rest!r}: one of {', '.join(RESTS)}")
    swings = np.broadcast_to(np.eye(3), (len(clip.names), 3, 3)).copy()
    if rest == "apose":
        upper = arms(clip)
        if not upper:
            raise ValueError("apose: no arms found (no Hand or Wrist joint under a forearm and an upper arm)")
        rest_at = rest_positions(clip)
        middle = rest_at[clip.roots[0]][0]
        angle = np.radians(APOSE_DEGREES)
        for u in upper:
            arm = _descendants(clip, u)
            hand = next(j for j in arm if HAND.search(_role_name(clip.names[j])))
            bone = clip.offsets[_toward(clip, u, hand)]
            side = np.sign(rest_at[u][0] - middle) or np.sign(bone[0]) or 1.0
            swings[arm] = swing(bone, (side * np.cos(angle), -np.sin(angle), 0.0))
    elif rest in ("axis", "stride"):
        if rest == "stride":
            world = forward(clip)[0]
            k = len(clip.motion) // 2 if frame is None else frame
            if not -len(clip.motion) <= k < len(clip.motion):
                raise ValueError(f"stride: frame {k} is not in the clip's {len(clip.motion)} frames")
            root = list(range(len(clip.names)))
            for j, p in enumerate(clip.parents):
                root[j] = root[p] if p >= 0 else j
        for j in range(len(clip.names)):
            bone = clip.bone(j)
            if bone is None or np.linalg.norm(bone) < TINY:
                continue
            if rest == "axis":
                goal = np.asarray(axis, dtype=float)
            else:
                goal = world[k, root[j]].T @ world[k, j] @ bone
            swings[j] = swing(bone, goal)
    for j, p in enumerate(clip.parents):
        if not clip.rotation_order(j):
            swings[j] = swings[p] if p >= 0 else np.eye(3)
    return swings


# -- the variant ---------------------------------------------------------------------------------------


def with_rest_frame(clip: Clip) -> Clip:
    """``clip`` with its rest pose (rotations 0, positions at their offsets) as a first frame."""
    row = np.zeros(clip.motion.shape[1])
    for j in range(len(clip.names)):
        for col, c in zip(clip.columns(j), clip.channels[j], strict=True):
            if c.lower() in POSITIONS:
                row[col] = clip.offsets[j][POSITIONS.index(c.lower())]
    return replace(clip, motion=np.vstack([row, clip.motion]))


def variant(clip: Clip, rest: str = "tpose", scale: float = 1.0, up: str = "Y", axis=(0.0, 1.0, 0.0),
            frame: int | None = None) -> Clip:
    """``clip`` with rest ``rest``, ``scale`` times its units and up axis ``up`` ("Y" or "Z"),
    every joint's world position on every frame the same (times ``scale``, turned by G for Z)."""
    if up.upper() not in ("Y", "Z"):
        raise ValueError(f"unknown up axis {up!r}: Y or Z")
    s = rest_swings(clip, rest, axis, frame)
    if rest == "axis":
        clip = with_rest_frame(clip)
    g = G_UP_Z if up.upper() == "Z" else np.eye(3)
    parents = np.array(clip.parents)
    s_parent = np.where((parents >= 0)[:, None, None], s[parents], np.eye(3))

    local, t = local_transforms(clip)
    local = g @ s_parent @ local @ s.swapaxes(-1, -2) @ g.T
    t = scale * (g @ s_parent @ t[..., None])[..., 0]
    offsets = scale * (g @ s_parent @ clip.offsets[..., None])[..., 0]
    ends = clip.end_offsets
    if len(ends):
        ends = scale * (g @ s[clip.end_parents] @ ends[..., None])[..., 0]

    old = clip.motion
    motion = old.copy()
    by_order: dict[str, list[int]] = {}
    for j in range(len(clip.names)):
        low = [c.lower() for c in clip.channels[j]]
        moved = [(col, POSITIONS.index(c)) for col, c in zip(clip.columns(j), low, strict=True) if c in POSITIONS]
        for col, a in moved:
            motion[:, col] = t[:, j, a]
        missing = sorted({0, 1, 2} - {a for _, a in moved}) if moved else []
        if missing and np.abs(t[:, j, missing]).max(initial=0.0) > TINY * max(1.0, np.abs(t[:, j]).max()):
            raise ValueError(f"joint {clip.names[j]!r}: its position channels cannot hold its turned translation")
        if clip.rotation_order(j):
            by_order.setdefault(clip.rotation_order(j), []).append(j)
    for order, joints in by_order.items():
        cols = np.array([[c for c, n in zip(clip.columns(j), clip.channels[j], strict=True)
                          if n.lower() in ROTATIONS] for j in joints])
        near = np.radians(old[0, cols]) if len(old) else np.zeros((len(joints), 3))
        angles = np.empty((len(old), len(joints), 3))
        for f in range(len(old)):
            near = angles[f] = euler_angles(local[f, joints], order, near)
        motion[:, cols] = np.degrees(angles)
    return replace(clip, offsets=offsets, end_offsets=ends, motion=motion)


def write_variant(src_path, dst_path, rest: str = "tpose", scale: float = 1.0, up: str = "Y",
                  axis=(0.0, 1.0, 0.0), frame: int | None = None, frames: slice | None = None,
                  digits: int = 6) -> Clip:
    """Write the variant of BVH file ``src_path`` (see :func:`variant`) to ``dst_path``; only
    the source's ``frames`` (a slice) when given, ``frame`` counting in those. Returns the
    variant as written."""
    clip = read(Path(src_path))
    if frames is not None:
        clip = replace(clip, motion=clip.motion[frames])
    out = variant(clip, rest, scale, up, axis, frame)
    Path(dst_path).write_text(format_clip(out, digits), encoding="utf-8", errors="surrogateescape")
    return out


def import_axes(up: str) -> dict[str, str]:
    """The ``axis_forward`` and ``axis_up`` of Blender's BVH importer (``import_anim.bvh``) that
    stand a variant of up axis ``up`` as the importer's defaults stand its Y-up source.

    The importer turns the armature by axis_conversion(from_forward, from_up), which takes
    from_forward to +Y and from_up to +Z. Its defaults ('-Z', 'Y') are C = +90° about X
    (+Y to +Z, +Z to -Y), the very turn G of ``--up Z``. A Z-up variant holds G·x for the
    source's x, so it stands as C·x when read with the identity: from_forward 'Y', from_up 'Z'.
    """
    if up.upper() == "Y":
        return {"axis_forward": "-Z", "axis_up": "Y"}
    if up.upper() == "Z":
        return {"axis_forward": "Y", "axis_up": "Z"}
    raise ValueError(f"unknown up axis {up!r}: Y or Z")


def _axis_argument(text: str) -> tuple[float, float, float]:
    match = re.fullmatch(r"([+-]?)([xyz])", text.strip().lower())
    if match:
        out = [0.0, 0.0, 0.0]
        out["xyz".index(match.group(2))] = -1.0 if match.group(1) == "-" else 1.0
        return tuple(out)
    values = tuple(float(v) for v in text.replace(",", " ").split())
    if len(values) != 3 or not any(values):
        raise argparse.ArgumentTypeError(f"not an axis: {text!r} (+Y, -X, or three numbers)")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", type=Path, help="the source BVH file")
    parser.add_argument("output", type=Path, help="the variant to write")
    parser.add_argument("--rest", choices=RESTS, default="tpose", help="the variant's rest pose (default tpose)")
    parser.add_argument("--axis", type=_axis_argument, default=(0.0, 1.0, 0.0),
                        help="--rest axis: the axis the bones lie along (+Y, -Z, or 'x y z'; default +Y)")
    parser.add_argument("--frame", type=int, help="--rest stride: the source frame of the rest, 0-based "
                                                   "(default the middle frame)")
    parser.add_argument("--units", choices=sorted(UNITS), help="the variant's units (needs --source-units)")
    parser.add_argument("--source-units", choices=sorted(UNITS), help="the source's units")
    parser.add_argument("--scale", type=float, help="multiply offsets and positions by this (instead of --units)")
    parser.add_argument("--up", choices=("Y", "Z"), default="Y", help="the variant's up axis (default Y)")
    parser.add_argument("--digits", type=int, default=6, help="decimals written (default 6)")
    args = parser.parse_args(argv)
    if args.units and args.scale is not None:
        parser.error("give --units or --scale, not both")
    scale = 1.0 if args.scale is None else args.scale
    if args.units:
        if not args.source_units:
            parser.error("--units needs --source-units (the source's own units)")
        scale = UNITS[args.source_units] / UNITS[args.units]
    try:
        out = write_variant(args.input, args.output, args.rest, scale, args.up, args.axis, args.frame,
                            digits=args.digits)
    except (OSError, ValueError) as error:
        print(f"bvh_variants: {error}", file=sys.stderr)
        return 1
    axes = import_axes(args.up)
    print(f"{args.output}: {len(out.names)} joints, {len(out.motion)} frames, rest {args.rest}, scale {scale:g}, "
          f"up {args.up} (import with axis_forward={axes['axis_forward']!r}, axis_up={axes['axis_up']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
