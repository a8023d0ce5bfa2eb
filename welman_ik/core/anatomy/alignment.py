"""Lining a target rig up with a source skeleton's pose without either rest pose: the rotations
a retarget is built from, from what is the same whatever rest the source was laid out in
(its joints' places and its bones' turns from one frame to another). Pure numpy; never
imports bpy.

A source bone's world rotation on frame t is R(t) = J(t) M, J the turn its joint makes in
the world and M its rest (the way its file laid it out). A clip laid out in another rest
(an A-pose, every bone along one axis, a rest posed mid-stride) has J'(t) = J(t) S⁻¹ and
M' = S M for some S per bone, so R'(t) R'(r)ᵀ = R(t) R(r)ᵀ: the turn of a bone from one
frame r to another is the same under any rest, and so are its joints' places. A target bone
lined up once with the source on a reference frame r (``A``) follows the source there on by
that turn: A(t) = R(t) R(r)ᵀ A.
"""

from __future__ import annotations

import numpy as np

__all__ = ["along", "frames_from", "line_up", "normalized", "reference_frame", "rotation_angles", "swing", "twist_onto"]


def normalized(v: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
    """``v`` (..., 3) made unit length; where it has none, ``fallback`` (or 0)."""
    v = np.asarray(v, dtype=float)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    out = v / np.where(norm > 1e-12, norm, 1.0)
    if fallback is not None:
        out = np.where(norm > 1e-12, out, np.broadcast_to(fallback, out.shape))
    return out


def along(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations (..., 3, 3) by ``angle`` [rad] about unit ``axis`` (..., 3) (Rodrigues)."""
    axis = np.asarray(axis, dtype=float)
    angle = np.asarray(angle, dtype=float)[..., None, None]
    k = np.zeros(axis.shape[:-1] + (3, 3))
    k[..., 0, 1], k[..., 0, 2] = -axis[..., 2], axis[..., 1]
    k[..., 1, 0], k[..., 1, 2] = axis[..., 2], -axis[..., 0]
    k[..., 2, 0], k[..., 2, 1] = -axis[..., 1], axis[..., 0]
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The least rotations (..., 3, 3) taking directions ``a`` to ``b`` (..., 3), about their
    common normal; opposite directions turn half a turn about any normal of ``a``."""
    a, b = normalized(a), normalized(b)
    axis = np.cross(a, b)
    sine = np.linalg.norm(axis, axis=-1)
    cosine = np.clip(np.einsum("...i,...i->...", a, b), -1.0, 1.0)
    # Opposite (or no) directions: any axis normal to a.
    other = np.where(np.abs(a[..., :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    normal = normalized(np.cross(a, other))
    axis = np.where((sine > 1e-9)[..., None], axis / np.where(sine > 1e-9, sine, 1.0)[..., None], normal)
    return along(axis, np.arctan2(sine, cosine))


def frames_from(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Orthonormal frames (..., 3, 3) whose first column is ``primary`` and whose second lies
    in the plane of ``primary`` and ``secondary`` (Gram-Schmidt)."""
    x = normalized(primary)
    y = normalized(secondary - np.einsum("...i,...i->...", secondary, x)[..., None] * x)
    return np.stack([x, y, np.cross(x, y)], axis=-1)


def twist_onto(axis: np.ndarray, v: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The angle [rad] about unit ``axis`` that turns ``v`` onto ``target`` as near as a turn
    about it can (their parts normal to the axis lined up); 0 where either part is nil."""
    axis = normalized(axis)
    vn = v - np.einsum("...i,...i->...", v, axis)[..., None] * axis
    tn = target - np.einsum("...i,...i->...", target, axis)[..., None] * axis
    sine = np.einsum("...i,...i->...", axis, np.cross(vn, tn))
    cosine = np.einsum("...i,...i->...", vn, tn)
    return np.where(np.abs(sine) + np.abs(cosine) > 1e-12, np.arctan2(sine, cosine), 0.0)


def rotation_angles(r: np.ndarray) -> np.ndarray:
    """The angle [rad, 0..pi] of each rotation (..., 3, 3)."""
    return np.arccos(np.clip((np.trace(r, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0))


def reference_frame(source_segments: np.ndarray, target_segments: np.ndarray, source_body: np.ndarray,
                    target_body: np.ndarray) -> int:
    """The frame on which the source stands most nearly as the target's rest does: the least
    sum over the bones of the angle between each source segment (frames, bones, 3) and the
    target's (bones, 3), each seen from its own body's frame (``*_body``: (frames, 3, 3) and
    (3, 3)). Reads only what is the same under any rest, so any rest picks the same frame."""
    source = normalized(np.einsum("fji,fbj->fbi", source_body, source_segments))
    target = normalized(target_segments @ target_body)
    cosine = np.clip(np.einsum("fbi,bi->fb", source, target), -1.0, 1.0)
    return int(np.argmin(np.arccos(cosine).sum(axis=1)))


def line_up(source: np.ndarray, source_segments: np.ndarray, target_rest: np.ndarray, target_segments: np.ndarray,
            carriers: np.ndarray, swung: np.ndarray, body: np.ndarray, hinges: dict, reference: int) -> np.ndarray:
    """Each target bone's world rotation on every frame (frames, bones, 3, 3), following the
    source bone it is paired with.

    ``source``: (frames, bones, 3, 3) the paired source bones' world rotations; ``*_segments``:
    the direction each bone's segment points, the source's on every frame (frames, bones, 3),
    the target's in its rest (bones, 3) (from its joint to the next paired joint, or along the
    bone); ``target_rest``: (bones, 3, 3) the target bones' rest world rotations; ``carriers``:
    (bones,) each bone's nearest paired ancestor's index, earlier in the list, or -1;
    ``swung``: (bones,) whether a bone's segment is swung onto the source's (not the hips,
    whose turn is the body's); ``body``: (3, 3) the turn from the target's rest body frame to
    the source's on the ``reference`` frame, which carries a bone with no carrier; ``hinges``:
    upper bone -> (lower bone, the target's hinge axis in its rest, world (3,)) for the knees
    and elbows.

    On the reference frame each bone is carried by its carrier as in the target's rest, then
    swung (the least turn) so that its segment points as the source's; an upper limb bone is
    then twisted about its segment so that the target's hinge axis lies along the source
    limb's bend axis where that limb bends most, so that the knee bends in the source's plane
    as a hinge. Every other frame is the source bone's turn from the reference frame."""
    count = source.shape[1]
    r = reference
    segments = normalized(source_segments)
    turn_from_reference = source @ np.swapaxes(source[r], -1, -2)[None]  # (frames, bones, 3, 3)
    lined = np.empty((count, 3, 3))
    for b in range(count):
        c = int(carriers[b])
        carried = body @ target_rest[b] if c < 0 else lined[c] @ target_rest[c].T @ target_rest[b]
        if swung[b]:
            carried = swing(carried @ (target_rest[b].T @ target_segments[b]), segments[r, b]) @ carried
        lined[b] = carried
        if b in hinges:
            lower, axis = hinges[b]
            bend = np.cross(segments[:, b], segments[:, lower])
            most = int(np.argmax(np.linalg.norm(bend, axis=-1)))
            if np.linalg.norm(bend[most]) > np.sin(np.radians(20.0)):
                # Where it bends most: the target's hinge axis carried there, turned about the
                # segment onto the source's bend axis; the same twist on the reference frame.
                hinge = turn_from_reference[most, b] @ lined[b] @ (target_rest[b].T @ axis)
                angle = twist_onto(segments[most, b], hinge, bend[most])
                lined[b] = along(segments[r, b], angle) @ lined[b]
    return turn_from_reference @ lined[None]
