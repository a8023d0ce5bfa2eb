"""A BVH writer that writes an armature's evaluated animation in its source file's own format.

A cleaned clip stands as its source stood: the source's header (names, hierarchy, offsets,
channel layout, rotation orders, frame time) is copied verbatim, and only the motion is
written, from the evaluated pose. Blender's own exporter (``bpy.ops.export_anim.bvh``) is not
used: it writes Blender's Z-up frame into the Y-up format (the clip lies on its back), gives
every joint six channels and derives the offsets anew.

The maths undoes Blender's importer (``io_anim_bvh.import_bvh``): it builds the bones in BVH
space, then rotates the armature by C = axis_conversion(from_forward='-Z', from_up='Y'), so
armature space is C · (BVH space); a bone's basis rotation is Rest⁻¹ · R · Rest, where R is
the joint's channel rotation (R = Ra·Rb·Rc for channels listed a, b, c). So with
D = P · Rest⁻¹ (P the pose bone's matrix), the joint's rotation in BVH space is G = Cᵀ·D·C,
its channels' R = G_parentᵀ · G, and position channels hold G_parentᵀ · Cᵀ(head − head_parent)
in file units (the root: Cᵀ · head). A joint without rotation channels keeps its rest rotation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..blender.rig.body import pose_matrices, rest_matrices
from ..core.euler import euler_angles, euler_matrix

# A joint whose every frame is this close to the source's is unchanged, and its values are
# copied verbatim. Blender's importer keys in single precision, so a clip read and written
# unchanged comes back this far off (up to 3e-4 degrees near gimbal lock, 7e-7 m).
ROTATION_TOLERANCE = 1e-3  # [degrees] the angle of the rotation between the two
POSITION_TOLERANCE = 1e-5  # [m]
NAME_BYTES = 63  # the longest bone name Blender keeps
ROTATIONS = ("xrotation", "yrotation", "zrotation")
POSITIONS = ("xposition", "yposition", "zposition")


@dataclass
class Hierarchy:
    """A BVH file as read: joints in file order, the header text and the motion."""

    names: list[str]  # joint names as the importer names its bones (words joined by "_", repeats ".001")
    parents: list[int]  # parent joint, -1 for a root
    offsets: np.ndarray  # (joints, 3) in file units
    channels: list[list[str]]  # per joint, in file order, as written ("Zrotation", ...)
    lines: list[str]  # the header: every line up to and including the "Frame Time:" line
    frames_line: int  # which of them is the "Frames:" line
    frame_time: float
    tokens: np.ndarray  # (frames, channels) the motion values as written (str)
    motion: np.ndarray  # (frames, channels) floats
    style: tuple[str, str, str] = ("", " ", "")  # a motion line's lead, separator and trail

    def columns(self, joint: int) -> list[int]:
        first = sum(len(c) for c in self.channels[:joint])
        return list(range(first, first + len(self.channels[joint])))


def parse(text: str) -> Hierarchy:
    """The hierarchy, header and motion of a BVH file's ``text``; ValueError when it is none."""
    lines = text.splitlines(keepends=True)
    words = [line.split() for line in lines]
    if not any(words) or next(w for w in words if w)[0].upper() != "HIERARCHY":
        raise ValueError("not a BVH file: it does not start with HIERARCHY")
    names, parents, offsets, channels, stack = [], [], [], [], []
    motion_at = None
    for i, w in enumerate(words):
        key = w[0].lower() if w else ""
        if key in ("root", "joint"):
            if len(w) < 2 or (stack and stack[-1] is None):
                raise ValueError(f"bad BVH hierarchy at line {i + 1}: {lines[i].strip()!r}")
            name = base = "_".join(w[1:])
            count = 0
            while name in names:
                count += 1
                name = f"{base}.{count:03d}"
            names.append(name)
            parents.append(stack[-1] if stack else -1)
            offsets.append((0.0, 0.0, 0.0))
            channels.append([])
            stack.append(len(names) - 1)
        elif key == "end":
            stack.append(None)
        elif key == "}":
            if not stack:
                raise ValueError(f"bad BVH hierarchy: unbalanced '}}' at line {i + 1}")
            stack.pop()
        elif key in ("offset", "channels") and stack and stack[-1] is not None:
            try:
                if key == "offset":
                    offsets[stack[-1]] = tuple(float(v) for v in w[1:4])
                else:
                    channels[stack[-1]] = w[2:2 + int(w[1])]
                    _check_channels(channels[stack[-1]], int(w[1]))
            except (ValueError, IndexError):
                raise ValueError(f"bad BVH {key.upper()} line {i + 1}: {lines[i].strip()!r}") from None
        elif key == "motion":
            motion_at = i
            break
    if motion_at is None or stack or not names:
        raise ValueError("truncated BVH: no whole skeleton followed by a MOTION section")
    after = [i for i in range(motion_at + 1, len(lines)) if words[i]]
    if (len(after) < 2 or words[after[0]][0].lower() != "frames:"
            or [v.lower() for v in words[after[1]][:2]] != ["frame", "time:"]):
        raise ValueError("truncated BVH: the MOTION section has no 'Frames:' and 'Frame Time:' lines")
    rows = [words[i] for i in after[2:]]
    width = sum(len(c) for c in channels)
    bad = next((n for n, row in enumerate(rows) if len(row) != width), None)
    if bad is not None:
        raise ValueError(f"bad BVH motion: frame {bad} has {len(rows[bad])} values for {width} channels")
    try:
        frame_time = float(words[after[1]][2])
        tokens = np.array(rows, dtype=object).reshape(len(rows), width)
        motion = np.array(rows, dtype=float).reshape(len(rows), width)
    except (ValueError, IndexError):
        raise ValueError("bad BVH motion: a value or the frame time is not a number") from None
    style = ("", " ", "")
    if rows:
        line = lines[after[2]].rstrip("\r\n")
        gap = re.search(r"\S(\s+)\S", line)
        style = (line[:len(line) - len(line.lstrip())], gap.group(1) if gap else " ", line[len(line.rstrip()):])
    return Hierarchy(names, parents, np.array(offsets, dtype=float).reshape(-1, 3), channels,
                     lines[:after[1] + 1], after[0], frame_time, tokens, motion, style)


def _check_channels(names: list[str], count: int) -> None:
    low = [n.lower() for n in names]
    rotations = [n for n in low if n in ROTATIONS]
    if (len(names) != count or any(n not in ROTATIONS + POSITIONS for n in low) or len(set(low)) != count
            or len(rotations) not in (0, 3)):
        raise ValueError("channels")


def write(obj, source: Path, output: Path, scale: float, frames: range, axes=("-Z", "Y"),
          evaluated=None) -> None:
    """Write armature ``obj``'s evaluated animation on Blender ``frames`` to ``output`` in the
    format of BVH ``source``, which it was imported from with ``global_scale=scale`` (metres
    per file unit), axes ``axes`` (forward, up) and file frame i at Blender frame 1 + i.
    ``evaluated``: that animation evaluated on ``frames`` already (``measure.evaluate``), read
    instead of evaluating every frame again."""
    from bpy_extras.io_utils import axis_conversion

    source, frames = Path(source), list(frames)
    try:
        h = parse(source.read_bytes().decode("utf-8", "surrogateescape"))
    except OSError as error:
        raise ValueError(f"could not read {source.name}: {error.strerror or error}") from None
    if not frames:
        raise ValueError("no frames to write")
    bones = [_bone(obj, name) for name in h.names]
    if evaluated is None:
        pose = pose_matrices(obj, bones, frames)[0]
    else:
        index = {name: i for i, name in enumerate(evaluated.names)}
        pose = evaluated.pose[:, [index[b] for b in bones]]
    rest = rest_matrices(obj, bones)[:, :3, :3]

    c = np.array(axis_conversion(from_forward=axes[0], from_up=axes[1]).to_3x3())
    u, _, vt = np.linalg.svd(pose[..., :3, :3] @ np.linalg.inv(rest))
    g = c.T @ (u @ vt) @ c  # (frames, joints, 3, 3) the joints' rotations in BVH space
    head = pose[..., :3, 3]
    parents = np.array(h.parents)
    rooted = (parents >= 0)[:, None]
    g_parent_t = np.where(rooted[..., None], g[:, parents], np.eye(3)).swapaxes(-1, -2)
    local = g_parent_t @ g
    delta = head - np.where(rooted, head[:, parents], 0.0)
    positions = (g_parent_t @ (c.T @ delta[..., None]))[..., 0] / scale

    rows = np.clip(np.array(frames) - 1, 0, max(len(h.motion) - 1, 0))
    inside = all(0 <= f - 1 < len(h.motion) for f in frames)
    near = h.motion[rows] if len(h.motion) else np.zeros((len(frames), h.motion.shape[1]))
    values = near.copy()
    unchanged = np.full(len(h.names), inside)
    by_order: dict[str, list[tuple[int, list[int]]]] = {}
    for j in range(len(h.names)):
        low = [n.lower() for n in h.channels[j]]
        moved = [(col, POSITIONS.index(n)) for col, n in zip(h.columns(j), low, strict=True) if n in POSITIONS]
        for col, axis in moved:
            values[:, col] = positions[:, j, axis]
            unchanged[j] &= bool(np.all(np.abs(values[:, col] - near[:, col]) * scale <= POSITION_TOLERANCE))
        turns = [(col, n[0].upper()) for col, n in zip(h.columns(j), low, strict=True) if n in ROTATIONS]
        if turns:
            by_order.setdefault("".join(a for _, a in turns), []).append((j, [col for col, _ in turns]))
    for order, group in by_order.items():
        joints, cols = [j for j, _ in group], np.array([cs for _, cs in group])
        was = np.radians(near[:, cols])
        values[:, cols] = np.degrees(euler_angles(local[:, joints], order, was))
        m = euler_matrix(was, order).swapaxes(-1, -2) @ local[:, joints]  # the turn from the source's
        sine = np.linalg.norm(m[..., [2, 0, 1], [1, 2, 0]] - m[..., [1, 2, 0], [2, 0, 1]], axis=-1) / 2
        turned = np.degrees(np.arctan2(sine, (np.trace(m, axis1=-2, axis2=-1) - 1) / 2)).max(axis=0)
        unchanged[joints] &= turned <= ROTATION_TOLERANCE

    text = np.char.mod("%.6f", values).astype(object)
    for j in np.flatnonzero(unchanged):
        text[:, h.columns(j)] = h.tokens[rows][:, h.columns(j)]
    header = list(h.lines)
    header[h.frames_line] = re.sub(r"(?i)(frames:\s*)\d+", lambda m: m.group(1) + str(len(frames)),
                                   header[h.frames_line], count=1)
    newline = header[-1][len(header[-1].rstrip("\r\n")):] or "\n"
    header[-1] = header[-1].rstrip("\r\n") + newline
    lead, separator, trail = h.style
    body = "".join(lead + separator.join(row) + trail + newline for row in text)
    Path(output).write_bytes(("".join(header) + body).encode("utf-8", "surrogateescape"))


def _bone(obj, name: str) -> str:
    """The bone the importer made for joint ``name`` (its name cut to Blender's limit)."""
    bone = name.encode("utf-8", "surrogateescape")[:NAME_BYTES].decode("utf-8", "ignore")
    if bone not in obj.data.bones:
        raise ValueError(f"the armature {obj.name!r} has no bone {bone!r} for the BVH joint {name!r}")
    return bone
