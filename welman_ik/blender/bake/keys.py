"""Step 5 of the bake, the keys: every solved frame turned into channels at once (``collect``),
then every baked channel's values on every baked frame written at once, the keys outside
the range kept as they were (``write_keys``)."""

from __future__ import annotations

import numpy as np

from ..rig import keyframes


def collect(trees: list, results: dict) -> dict:
    """Put the channels of the frames solved with each of ``trees`` (``Tree.solutions``) into
    ``results`` (frame -> bone -> channels), all of a tree's frames at once, and let go of
    every tree but the current one. Returns ``results``."""
    for tree in trees:
        if tree.solutions.frames:
            results.update(tree.solutions.channels())
            tree.solutions.clear()
    del trees[:-1]
    return results


def channels_of(pose_bone) -> tuple:
    path = keyframes.rotation_path(pose_bone)
    return path, tuple(getattr(pose_bone, path)), tuple(pose_bone.location) if pose_bone.parent is None else None


# Per-key fields put back on the keys kept outside a baked range, with their widths.
KEY_FIELDS = {"co": 2, "handle_left": 2, "handle_right": 2, "interpolation": 1, "handle_left_type": 1,
              "handle_right_type": 1, "easing": 1, "type": 1, "back": 1, "amplitude": 1, "period": 1}
ENUM_FIELDS = {"interpolation", "handle_left_type", "handle_right_type", "easing", "type"}
FREE_HANDLE = 0  # the 'FREE' item of Keyframe.handle_left_type / handle_right_type
AUTO_CLAMPED_HANDLE = 4


def write_keys(obj, results: dict) -> None:
    """Baked values on every baked frame, in bulk: existing keys of a baked channel inside
    the range are replaced by linear keys; keys outside it are kept as they were (handles,
    interpolation and all), and the nearest kept key on either side gets free handles where
    they were, so the curve outside the range keeps its shape."""
    frames = sorted(results)
    first, last = frames[0], frames[-1]
    groups: dict[tuple, list[int]] = {}  # the bones a frame keys (on most frames the same) -> those frames
    for frame in frames:
        groups.setdefault(tuple(results[frame]), []).append(frame)
    channels: dict[str, tuple[list, list]] = {}  # data path -> (frames, values), a part per group
    for names, at in groups.items():
        # each bone's entries on the group's frames, transposed at once: (paths, rotations, locations)
        for name, column in zip(names, zip(*(results[frame].values() for frame in at))):
            paths, rotations, locations = zip(*column)
            kinds = set(paths)  # (a bone's rotation path: one on nearly every bake's frames)
            for path in kinds:
                which = range(len(at)) if len(kinds) == 1 else [i for i, p in enumerate(paths) if p == path]
                keyed = channels.setdefault(f'pose.bones["{name}"].{path}', ([], []))
                keyed[0].extend(at[i] for i in which)
                keyed[1].extend(rotations[i] for i in which)
            located = [i for i, location in enumerate(locations) if location is not None]
            if located:
                keyed = channels.setdefault(f'pose.bones["{name}"].location', ([], []))
                keyed[0].extend(at[i] for i in located)
                keyed[1].extend(locations[i] for i in located)
    columns: dict[tuple[str, int], np.ndarray] = {}
    for data_path, (at, values) in channels.items():
        order = np.argsort(at, kind="stable")
        at, values = np.asarray(at, dtype=float)[order], np.array(values, dtype=float)[order]
        for index in range(values.shape[1]):
            columns[data_path, index] = np.column_stack([at, values[:, index]])
    curves = keyframes.ensure_fcurves(obj, [(path, index, path.split('"')[1]) for path, index in columns])
    for curve, points in zip(curves, columns.values()):
        _write_curve(curve, points, first, last)


def _write_curve(curve, points: np.ndarray, first: int, last: int) -> None:
    """One channel's baked ``points`` (n, 2: frame, value) in place of its keys within
    ``first``..``last``; its keys outside kept as they were."""
    keys = curve.keyframe_points
    co = np.empty(2 * len(keys))
    keys.foreach_get("co", co)
    before, after = np.flatnonzero(co[::2] < first), np.flatnonzero(co[::2] > last)
    if not (before.size or after.size):  # nothing kept: the new keys alone, the fields a new key lacks
        keys.clear()
        keys.add(len(points))
        co = points.ravel()
        for field in ("co", "handle_left", "handle_right"):
            keys.foreach_set(field, co)
        keys.foreach_set("interpolation", np.full(len(points), keyframes.LINEAR, dtype=int))
        handles = np.full(len(points), AUTO_CLAMPED_HANDLE, dtype=int)
        keys.foreach_set("handle_left_type", handles)
        keys.foreach_set("handle_right_type", handles)
        curve.update()
        return
    old = {}
    for field, width in KEY_FIELDS.items():
        old[field] = np.empty(len(keys) * width)
        keys.foreach_get(field, old[field])
        old[field] = old[field].reshape(len(keys), width)
    if before.size:  # the segment before the range keeps its shape
        old["handle_right_type"][before[-1]] = FREE_HANDLE
        old["handle_left_type"][before[-1]] = FREE_HANDLE
    if after.size:
        old["handle_left_type"][after[0]] = FREE_HANDLE
        old["handle_right_type"][after[0]] = FREE_HANDLE
    kept = np.concatenate([before, after])
    new = {field: np.zeros((len(points), width)) for field, width in KEY_FIELDS.items()}
    new["co"] = points
    new["handle_left"] = new["handle_right"] = new["co"]
    new["interpolation"][:] = keyframes.LINEAR
    new["handle_left_type"][:] = new["handle_right_type"][:] = AUTO_CLAMPED_HANDLE
    merged = {field: np.concatenate([old[field][kept], new[field]]) for field in KEY_FIELDS}
    order = np.argsort(merged["co"][:, 0], kind="stable")
    keys.clear()
    keys.add(len(order))
    for field in KEY_FIELDS:
        values = merged[field][order].ravel()
        keys.foreach_set(field, values.astype(int) if field in ENUM_FIELDS else values)
    curve.update()
