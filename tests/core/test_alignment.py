"""``welman_ik.core.anatomy.alignment``: the least rotation between two directions, Rodrigues'
rotations, frames from two directions, the twist about an axis that lines two vectors up, the
reference frame where a source stands as the target's rest, and ``line_up``, a target rig
lined up with a source's pose that is the same whatever rest the source was laid out in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from welman_ik.core.anatomy import alignment

PROPERTY = settings(max_examples=150, deadline=None)
coordinate = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
vector = st.tuples(coordinate, coordinate, coordinate).map(np.array)
sizeable = vector.filter(lambda v: np.linalg.norm(v) > 0.1)
angle = st.floats(-2.0 * np.pi, 2.0 * np.pi, allow_nan=False, allow_infinity=False)

CARRIERS = np.array([-1, 0, 1, 2])  # hips -> thigh -> shin -> foot
SWUNG = np.array([False, True, True, True])  # the hips turn as the body does
THIGH, SHIN = 1, 2
FRAMES = 24


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def rotation(axis, theta) -> np.ndarray:
    """Rotations about unit ``axis`` (..., 3) by ``theta`` (...), built as cos·I + sin·[k]x + (1-cos)·kkᵀ
    (written out here, not taken from the module under test)."""
    k = unit(axis)
    theta = np.asarray(theta, dtype=float)[..., None, None]
    cross = np.zeros(k.shape[:-1] + (3, 3))
    cross[..., 0, 1], cross[..., 0, 2], cross[..., 1, 2] = -k[..., 2], k[..., 1], -k[..., 0]
    cross = cross - np.swapaxes(cross, -1, -2)
    outer = k[..., :, None] * k[..., None, :]
    return np.cos(theta) * np.eye(3) + np.sin(theta) * cross + (1.0 - np.cos(theta)) * outer


def random_rotations(rng: np.random.Generator, shape: tuple = ()) -> np.ndarray:
    """Uniform random proper rotations (QR of a Gaussian matrix, signs fixed, det made +1)."""
    q, r = np.linalg.qr(rng.normal(size=shape + (3, 3)))
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    q[..., :, 2] *= np.linalg.det(q)[..., None]
    return q


def angle_of(r: np.ndarray) -> np.ndarray:
    """The angle of rotations (..., 3, 3), from the sine and cosine (not ``rotation_angles``)."""
    skew = np.stack([r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]], axis=-1)
    return np.arctan2(np.linalg.norm(skew, axis=-1) / 2.0, (np.trace(r, axis1=-2, axis2=-1) - 1.0) / 2.0)


def angle_between(a, b) -> np.ndarray:
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.einsum("...i,...i->...", a, b))


def assert_proper(r: np.ndarray, atol: float = 1e-12) -> None:
    eye = np.broadcast_to(np.eye(3), r.shape)
    np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), eye, atol=atol)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=atol)


def perpendicular(rng: np.random.Generator, v: np.ndarray) -> np.ndarray:
    return unit(np.cross(v, rng.normal(size=3)))


def expm(m: np.ndarray, terms: int = 40) -> np.ndarray:
    """Matrix exponential by its Taylor series, after halving ``m`` until small (then squaring)."""
    halvings = max(0, int(np.ceil(np.log2(max(np.abs(m).max(), 1e-300)))) + 2)
    m = m / 2.0**halvings
    out, term = np.eye(3), np.eye(3)
    for i in range(1, terms):
        term = term @ m / i
        out = out + term
    for _ in range(halvings):
        out = out @ out
    return out


def skew(k: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])


# --- swing -------------------------------------------------------------------------------------


@PROPERTY
@given(sizeable, sizeable, st.floats(-np.pi, np.pi))
def test_swing_is_the_least_rotation_taking_a_to_b(a, b, phi):
    a_hat, b_hat = unit(a), unit(b)
    r = alignment.swing(a, b)
    assert_proper(r)
    np.testing.assert_allclose(r @ a_hat, b_hat, atol=1e-7)  # 1e-7: near-opposite inputs are ill-conditioned
    between = float(angle_between(a_hat, b_hat))
    assume(0.0 < between < np.pi - 1e-6 and np.linalg.norm(np.cross(a_hat, b_hat)) > 1e-6)
    # Its axis is the common normal of a and b, its angle the angle between them...
    n = unit(np.cross(a_hat, b_hat))
    np.testing.assert_allclose(r @ n, n, atol=1e-9)
    np.testing.assert_allclose(angle_of(r), between, atol=1e-9)
    # ...and every other rotation taking a to b (a turn about b after it) turns at least as far.
    other = rotation(b_hat, phi) @ r
    np.testing.assert_allclose(other @ a_hat, b_hat, atol=1e-9)
    assert angle_of(other) >= angle_of(r) - 1e-9


DIRECTIONS = [
    [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0],
    [0.9, 0.1, 0.0], [0.95, -0.3, 0.1], [0.3, -0.4, 2.0], [-5.0, 1e-9, 0.0], [1e-3, 2e-3, -7.0],
]


@pytest.mark.parametrize("a", DIRECTIONS)
@pytest.mark.parametrize("scale", [1.0, 3.5])
def test_swing_of_equal_and_opposite_directions(a, scale):
    a = np.array(a)
    a_hat = unit(a)
    np.testing.assert_allclose(alignment.swing(a, scale * a), np.eye(3), atol=1e-12)
    half = alignment.swing(a, -scale * a)
    assert_proper(half)
    np.testing.assert_allclose(half @ a_hat, -a_hat, atol=1e-12)
    np.testing.assert_allclose(angle_of(half), np.pi, atol=1e-9)
    # A half turn about an axis normal to a: (R + I)/2 is the projector onto that axis.
    projector = (half + np.eye(3)) / 2.0
    np.testing.assert_allclose(projector @ projector, projector, atol=1e-12)
    np.testing.assert_allclose(np.trace(projector), 1.0, atol=1e-12)
    np.testing.assert_allclose(projector @ a_hat, 0.0, atol=1e-12)


@pytest.mark.parametrize("eps", [1e-14, 1e-12, 1e-10, 1e-9, 2e-9, 1e-8, 1e-6, 1e-3])
def test_swing_of_nearly_opposite_directions(eps):
    """Nearly opposite directions are ill-conditioned (the common normal is a cross product of
    two almost opposite vectors): a still lands on b within 1e-6, a proper rotation."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        a = unit(rng.normal(size=3))
        b = unit(-a + eps * perpendicular(rng, a))
        r = alignment.swing(a, b)
        assert_proper(r)
        np.testing.assert_allclose(r @ a, b, atol=1e-6)


def test_swing_batches():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5, 3))
    b = rng.normal(size=(4, 5, 3))
    b[0, 0] = -2.0 * a[0, 0]  # opposite
    b[1, 1] = 0.5 * a[1, 1]  # equal
    b[2, 2] = [0.0, 0.0, 1.0]
    a[2, 2] = [0.0, 0.0, -1.0]
    r = alignment.swing(a, b)
    assert r.shape == (4, 5, 3, 3)
    assert_proper(r)
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", r, unit(a)), unit(b), atol=1e-12)
    for i in range(4):
        for j in range(5):
            np.testing.assert_allclose(r[i, j], alignment.swing(a[i, j], b[i, j]), atol=1e-14)
    # Broadcast against each other.
    wide = alignment.swing(a[:, :1], b[0])
    assert wide.shape == (4, 5, 3, 3)
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", wide, unit(a[:, :1])), np.broadcast_to(unit(b[0]), (4, 5, 3)),
                               atol=1e-12)


# --- along -------------------------------------------------------------------------------------


X, Y, Z = np.eye(3)


@pytest.mark.parametrize(("axis", "v", "expected"), [
    (Z, X, Y), (Z, Y, -X), (X, Y, Z), (X, Z, -Y), (Y, Z, X), (Y, X, -Z), (-Z, X, -Y),
    (unit([1.0, 1.0, 0.0]), Z, unit([1.0, -1.0, 0.0])),
])
def test_along_quarter_turns(axis, v, expected):
    r = alignment.along(axis, np.pi / 2.0)
    np.testing.assert_allclose(r @ v, expected, atol=1e-15)
    np.testing.assert_allclose(r @ axis, axis, atol=1e-15)
    np.testing.assert_allclose(alignment.along(axis, -np.pi / 2.0) @ expected, v, atol=1e-15)
    np.testing.assert_allclose(np.linalg.matrix_power(r, 4), np.eye(3), atol=1e-14)


@PROPERTY
@given(sizeable, angle, angle)
def test_along_is_the_exponential_of_its_axis_and_composes(axis, first, second):
    k = unit(axis)
    r = alignment.along(k, first)
    assert_proper(r)
    np.testing.assert_allclose(r @ k, k, atol=1e-12)
    np.testing.assert_allclose(r, expm(first * skew(k)), atol=1e-12)
    np.testing.assert_allclose(r @ alignment.along(k, second), alignment.along(k, first + second), atol=1e-12)
    # Many small turns make the big one...
    np.testing.assert_allclose(np.linalg.matrix_power(alignment.along(k, first / 64.0), 64), r, atol=1e-12)
    # ...and so do first-order steps I + θK/n, to O(1/n).
    n = 20000
    steps = np.linalg.matrix_power(np.eye(3) + (first / n) * skew(k), n)
    np.testing.assert_allclose(steps, r, atol=5.0 * first**2 / n + 1e-9)


def test_along_batches():
    rng = np.random.default_rng(1)
    axes = unit(rng.normal(size=(3, 4, 3)))
    angles = rng.uniform(-4.0, 4.0, size=(3, 4))
    r = alignment.along(axes, angles)
    assert r.shape == (3, 4, 3, 3)
    np.testing.assert_allclose(r, rotation(axes, angles), atol=1e-14)
    assert_proper(r)


# --- frames_from -------------------------------------------------------------------------------


@PROPERTY
@given(sizeable, sizeable)
def test_frames_from_two_directions(primary, secondary):
    assume(np.linalg.norm(np.cross(unit(primary), unit(secondary))) > 1e-3)
    f = alignment.frames_from(primary, secondary)
    assert_proper(f, atol=1e-9)
    np.testing.assert_allclose(f[:, 0], unit(primary), atol=1e-12)
    normal = unit(np.cross(primary, secondary))
    np.testing.assert_allclose(f[:, 1] @ normal, 0.0, atol=1e-9)  # in the plane of the two
    assert f[:, 1] @ secondary > 0.0
    np.testing.assert_allclose(f[:, 2], normal, atol=1e-9)  # so the third is their normal


def test_frames_from_batches():
    rng = np.random.default_rng(2)
    primary, secondary = rng.normal(size=(2, 6, 5, 3))
    f = alignment.frames_from(primary, secondary)
    assert f.shape == (6, 5, 3, 3)
    assert_proper(f, atol=1e-12)
    np.testing.assert_allclose(f[..., 0], unit(primary), atol=1e-12)
    np.testing.assert_allclose(np.einsum("...i,...i->...", f[..., 1], np.cross(primary, secondary)), 0.0, atol=1e-12)
    assert (np.einsum("...i,...i->...", f[..., 1], secondary) > 0.0).all()


# --- twist_onto --------------------------------------------------------------------------------


def normal_part(v, axis):
    return v - (v @ axis) * axis


@PROPERTY
@given(sizeable, vector, vector)
def test_twist_onto_lines_the_normal_parts_up(axis, v, target):
    k = unit(axis)
    assume(np.linalg.norm(normal_part(v, k)) > 1e-3 and np.linalg.norm(normal_part(target, k)) > 1e-3)
    theta = alignment.twist_onto(axis, v, target)  # the axis need not be unit
    assert -np.pi <= theta <= np.pi
    turned = rotation(k, theta) @ v
    vn, tn = unit(normal_part(turned, k)), unit(normal_part(target, k))
    np.testing.assert_allclose(vn, tn, atol=1e-9)  # parallel and the same way
    np.testing.assert_allclose(turned @ k, v @ k, atol=1e-12)


def test_twist_onto_nil_parts_and_batches():
    rng = np.random.default_rng(4)
    axis = unit(rng.normal(size=3))
    v = rng.normal(size=3)
    assert alignment.twist_onto(axis, 2.0 * axis, v) == 0.0
    assert alignment.twist_onto(axis, v, -3.0 * axis) == 0.0
    np.testing.assert_allclose(alignment.twist_onto(axis, v, v), 0.0, atol=1e-12)
    np.testing.assert_allclose(abs(alignment.twist_onto(axis, v, rotation(axis, np.pi) @ v)), np.pi, atol=1e-9)
    axes = unit(rng.normal(size=(7, 3)))
    vs, targets = rng.normal(size=(2, 7, 3))
    thetas = alignment.twist_onto(axes, vs, targets)
    assert thetas.shape == (7,)
    for i in range(7):
        np.testing.assert_allclose(thetas[i], alignment.twist_onto(axes[i], vs[i], targets[i]), atol=1e-14)
        turned = rotation(axes[i], thetas[i]) @ vs[i]
        np.testing.assert_allclose(unit(normal_part(turned, axes[i])), unit(normal_part(targets[i], axes[i])),
                                   atol=1e-9)


# --- reference_frame ---------------------------------------------------------------------------


def standing(rng, frames=12, bones=5, match=7):
    """A target's rest (segments and body frame) and a source whose frame ``match`` stands
    exactly as it (in its own body frame, with other segment lengths), the others at random."""
    target_body = random_rotations(rng)
    target_segments = rng.normal(size=(bones, 3))
    local = unit(target_segments @ target_body)  # (body frame)ᵀ · segment, row by row
    source_body = random_rotations(rng, (frames,))
    in_body = unit(rng.normal(size=(frames, bones, 3)))
    in_body[match] = local
    lengths = rng.uniform(0.2, 3.0, size=(frames, bones, 1))
    source_segments = lengths * np.einsum("fij,fbj->fbi", source_body, in_body)
    return source_segments, target_segments, source_body, target_body, local


@pytest.mark.parametrize("seed", range(6))
def test_reference_frame_picks_the_matching_frame(seed):
    rng = np.random.default_rng(seed)
    match = int(rng.integers(12))
    source_segments, target_segments, source_body, target_body, _ = standing(rng, match=match)
    assert alignment.reference_frame(source_segments, target_segments, source_body, target_body) == match


@pytest.mark.parametrize("seed", range(6))
def test_reference_frame_is_the_same_when_the_whole_body_turns(seed):
    """Each frame's segments and body frame turned by one world rotation per frame (the body
    turned as a whole, differently on each frame) picks the same frame; so does the target's
    rest turned as a whole."""
    rng = np.random.default_rng(100 + seed)
    source_segments, target_segments, source_body, target_body, _ = standing(rng, match=3)
    # Make the match inexact, so that the ranking between frames is what is tested.
    source_segments = source_segments + 0.05 * rng.normal(size=source_segments.shape)
    picked = alignment.reference_frame(source_segments, target_segments, source_body, target_body)
    world = random_rotations(rng, (len(source_body),))
    turned = alignment.reference_frame(np.einsum("fij,fbj->fbi", world, source_segments), target_segments,
                                       world @ source_body, target_body)
    assert turned == picked
    g = random_rotations(rng)
    assert alignment.reference_frame(source_segments, target_segments @ g.T, source_body, g @ target_body) == picked


def test_reference_frame_prefers_the_nearest_stance():
    """Frames that are the target's stance bent further and further away: the least bent wins."""
    rng = np.random.default_rng(11)
    source_segments, target_segments, source_body, target_body, local = standing(rng, frames=9, match=0)
    bends = np.array([0.5, 0.4, 0.3, 0.05, 0.2, 0.6, 0.35, 0.25, 0.45])
    in_body = np.empty((9, len(local), 3))
    for f, bend in enumerate(bends):
        for b, u in enumerate(local):
            in_body[f, b] = rotation(perpendicular(rng, u), bend) @ u
    source_segments = np.einsum("fij,fbj->fbi", source_body, in_body)
    assert alignment.reference_frame(source_segments, target_segments, source_body, target_body) == 3


# --- line_up -----------------------------------------------------------------------------------


def source_clip(rng, frames=FRAMES, max_bend=1.9):  # [rad]; about 109°
    """A hips -> thigh -> shin -> foot source: world rotations (frames, 4, 3, 3) and its joints'
    places (frames, 5, 3) (hips, hip joint, knee, ankle, toe), the knee a hinge about the
    thigh's local ``hinge``. Each bone's segment is from its joint to the next, so it is rigid
    with the bone."""
    hinge = unit(rng.normal(size=3))
    offsets = rng.uniform(0.1, 0.5, size=(4, 1)) * unit(rng.normal(size=(4, 3)))  # in each bone's local axes
    offsets[THIGH] = 0.45 * perpendicular(rng, hinge)
    shin_rest = random_rotations(rng)  # the shin's own axes are anything
    offsets[SHIN] = 0.42 * (shin_rest.T @ unit(offsets[THIGH]))  # straight on from the thigh at no bend
    rotations = random_rotations(rng, (frames, 4))
    bend = rng.uniform(0.0, max_bend, size=frames)
    rotations[:, SHIN] = rotations[:, THIGH] @ rotation(hinge, bend) @ shin_rest
    joints = np.zeros((frames, 5, 3))
    joints[:, 0] = rng.normal(size=(frames, 3))
    for b in range(4):
        joints[:, b + 1] = joints[:, b] + rotations[:, b] @ offsets[b]
    return rotations, joints, hinge, bend


def segments_of(joints):
    return joints[:, 1:] - joints[:, :-1]


def target_rig(rng):
    rest = random_rotations(rng, (4,))
    segments = rng.uniform(0.2, 1.0, size=(4, 1)) * unit(rng.normal(size=(4, 3)))
    axis = perpendicular(rng, segments[THIGH])  # world, in the rest; normal to the thigh's segment
    return rest, segments, axis


def lined_up(rotations, joints, rest, segments, body, reference, hinges=None):
    return alignment.line_up(rotations, segments_of(joints), rest, segments, CARRIERS, SWUNG, body,
                             hinges or {}, reference)


def carried_segments(lined, rest, segments):
    """Each target bone's rest segment where ``lined`` turns it, (frames, bones, 3)."""
    return np.einsum("fbij,bj->fbi", lined, np.einsum("bji,bj->bi", rest, segments))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("hinged", [False, True])
def test_line_up_is_the_same_whatever_the_sources_rest(seed, hinged):
    """The same motion laid out in another rest: R'(t) = R(t)·Q per bone, the joints' places
    unchanged. The target moves the same on every frame."""
    rng = np.random.default_rng(seed)
    rotations, joints, _, _ = source_clip(rng)
    rest, segments, axis = target_rig(rng)
    body, reference = random_rotations(rng), int(rng.integers(FRAMES))
    hinges = {THIGH: (SHIN, axis)} if hinged else {}
    lined = lined_up(rotations, joints, rest, segments, body, reference, hinges)
    assert lined.shape == (FRAMES, 4, 3, 3)
    assert_proper(lined, atol=1e-9)
    relaid = rotations @ random_rotations(rng, (4,))[None]
    np.testing.assert_allclose(lined_up(relaid, joints, rest, segments, body, reference, hinges), lined, atol=1e-9)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("hinged", [False, True])
def test_line_up_points_each_swung_segment_as_the_source_does(seed, hinged):
    """Every frame: each swung target bone's segment points along the source's, and each target
    bone turns from the reference frame as its source bone does."""
    rng = np.random.default_rng(50 + seed)
    rotations, joints, _, _ = source_clip(rng)
    rest, segments, axis = target_rig(rng)
    body, reference = random_rotations(rng), int(rng.integers(FRAMES))
    lined = lined_up(rotations, joints, rest, segments, body, reference, {THIGH: (SHIN, axis)} if hinged else {})
    carried = carried_segments(lined, rest, segments)
    np.testing.assert_allclose(unit(carried[:, SWUNG]), unit(segments_of(joints)[:, SWUNG]), atol=1e-9)
    turns = lined @ np.swapaxes(lined[reference], -1, -2)[None]
    np.testing.assert_allclose(turns, rotations @ np.swapaxes(rotations[reference], -1, -2)[None], atol=1e-9)
    # The hips are not swung: on the reference frame they stand as the body frame carries them.
    np.testing.assert_allclose(lined[reference, 0], body @ rest[0], atol=1e-12)


def test_line_up_with_nothing_swung_carries_the_whole_rest_by_the_body():
    rng = np.random.default_rng(5)
    rotations, joints, _, _ = source_clip(rng)
    rest, segments, _ = target_rig(rng)
    body = random_rotations(rng)
    lined = alignment.line_up(rotations, segments_of(joints), rest, segments, CARRIERS, np.zeros(4, dtype=bool), body,
                              {}, 4)
    np.testing.assert_allclose(lined[4], body @ rest, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_line_up_hinges_the_knee_in_the_sources_bend_plane(seed):
    """The source knee bends about a fixed axis of its thigh; the target's hinge axis, carried
    to the frame where the knee bends most, lies along the source's bend normal (thigh × shin),
    the same way round, and so on every frame the knee bends (the bend axis is rigid with the
    thigh)."""
    rng = np.random.default_rng(200 + seed)
    rotations, joints, hinge, bend = source_clip(rng)
    rest, segments, axis = target_rig(rng)
    body, reference = random_rotations(rng), int(rng.integers(FRAMES))
    lined = lined_up(rotations, joints, rest, segments, body, reference, {THIGH: (SHIN, axis)})
    carried_axis = lined[:, THIGH] @ (rest[THIGH].T @ axis)  # (frames, 3)
    source = segments_of(joints)
    normal = np.cross(source[:, THIGH], source[:, SHIN])
    most = int(np.argmax(np.sin(bend)))
    assert np.sin(bend[most]) > np.sin(np.radians(20.0))
    np.testing.assert_allclose(carried_axis[most], unit(normal[most]), atol=1e-9)
    bent = np.sin(bend) > 1e-3
    np.testing.assert_allclose(carried_axis[bent], unit(normal[bent]), atol=1e-9)
    np.testing.assert_allclose(carried_axis, rotations[:, THIGH] @ hinge, atol=1e-9)
    # The twist is about the thigh's segment: the thigh still points as the source's.
    np.testing.assert_allclose(unit(carried_segments(lined, rest, segments)[:, THIGH]), unit(source[:, THIGH]),
                               atol=1e-9)


def test_line_up_leaves_a_straight_limb_untwisted():
    """A knee that barely bends gives no bend axis to trust: the hinge changes nothing."""
    rng = np.random.default_rng(9)
    rotations, joints, _, _ = source_clip(rng, max_bend=0.09)
    rest, segments, axis = target_rig(rng)
    body = random_rotations(rng)
    plain = lined_up(rotations, joints, rest, segments, body, 3)
    np.testing.assert_allclose(lined_up(rotations, joints, rest, segments, body, 3, {THIGH: (SHIN, axis)}), plain,
                               atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_a_target_at_rest_in_the_sources_stance_follows_it_exactly(seed):
    """The target's rest is the source's pose on frame k (turned as a whole by G, every bone
    with axes of its own Q): ``reference_frame`` finds k, and ``line_up`` with the body turn
    between them has the target bones turn as the source's do, R(t)·Q, on every frame."""
    rng = np.random.default_rng(300 + seed)
    rotations, joints, hinge, _ = source_clip(rng)
    source = segments_of(joints)
    k = int(rng.integers(FRAMES))
    g, own = random_rotations(rng), random_rotations(rng, (4,))
    rest = g @ rotations[k] @ own
    segments = (source[k] @ g.T) * rng.uniform(0.5, 2.0, size=(4, 1))  # other bone lengths
    axis = g @ rotations[k, THIGH] @ hinge
    source_body = random_rotations(rng, (FRAMES,))
    target_body = g @ source_body[k]
    reference = alignment.reference_frame(source, segments, source_body, target_body)
    assert reference == k
    body = source_body[k] @ target_body.T
    lined = lined_up(rotations, joints, rest, segments, body, reference, {THIGH: (SHIN, axis)})
    np.testing.assert_allclose(lined, rotations @ own[None], atol=1e-9)
