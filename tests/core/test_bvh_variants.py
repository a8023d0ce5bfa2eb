"""``scripts/bvh_variants.py`` without Blender: a clip rewritten with another rest pose, other
units or another up axis moves the same (every joint and End Site at the same world position on
every frame), its rest really changed, and it reads back with the source's joints and channels."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))

import bvh_variants as bv

FIXTURES = ROOT / "tests" / "fixtures"
CLIPS = ("pymo_walk.bvh", "mixamo_clip.bvh", "mocapbank_clip.bvh")
TOLERANCE = 1e-3  # [source file units]
LEGS = re.compile(r"upleg|leg$|hip$|knee|thigh|shin")


def source(name: str) -> bv.Clip:
    return bv.read(FIXTURES / name)


def unit(v) -> np.ndarray:
    return np.asarray(v, dtype=float) / np.linalg.norm(v)


def degrees_between(a, b) -> float:
    return float(np.degrees(np.arccos(np.clip(unit(a) @ unit(b), -1.0, 1.0))))


def written(tmp_path: Path, name: str, **options) -> tuple[Path, bv.Clip]:
    out = tmp_path / f"{Path(name).stem}_{options.get('rest', 'tpose')}.bvh"
    return out, bv.write_variant(FIXTURES / name, out, **options)


def assert_same_motion(name: str, out: Path, scale: float = 1.0, up: str = "Y", rest: str = "tpose") -> None:
    """Every joint and End Site of ``out`` (read back from its text) where the source has it on
    every frame, after undoing ``scale`` and the up axis; the axis rest's first frame is the
    source's rest pose, its roots at their offsets."""
    names, before = bv.world_positions(FIXTURES / name, end_sites=True)
    names_out, after = bv.world_positions(out.read_text(), end_sites=True)
    assert names_out == names
    after = after / scale
    if up == "Z":
        after = after @ bv.G_UP_Z  # G⁻¹·x for every row x
    if rest == "axis":
        clip = source(name)
        joints = len(clip.names)
        assert np.abs(after[0, :joints] - bv.rest_positions(clip)).max() < TOLERANCE
        assert np.allclose(after[0, clip.roots], clip.offsets[clip.roots], atol=TOLERANCE)
        after = after[1:]
    assert after.shape == before.shape
    assert np.abs(after - before).max() < TOLERANCE


@pytest.mark.parametrize("rest", bv.RESTS)
@pytest.mark.parametrize("name", CLIPS)
def test_every_rest_keeps_every_world_position(tmp_path, name, rest):
    out, _ = written(tmp_path, name, rest=rest)
    assert_same_motion(name, out, rest=rest)


@pytest.mark.parametrize(("rest", "scale", "up"), [
    ("tpose", 2.54, "Y"),  # inches to centimetres
    ("tpose", 0.0254, "Y"),  # inches to metres
    ("tpose", 1.0, "Z"),
    ("apose", 2.54, "Z"),
    ("axis", 0.0254, "Z"),
])
def test_units_and_up_axis_keep_every_world_position(tmp_path, rest, scale, up):
    out, _ = written(tmp_path, "pymo_walk.bvh", rest=rest, scale=scale, up=up)
    assert_same_motion("pymo_walk.bvh", out, scale, up, rest)


def test_the_command_line_converts_units_and_up_axis(tmp_path):
    out = tmp_path / "walk.bvh"
    args = [str(FIXTURES / "pymo_walk.bvh"), str(out), "--rest", "stride", "--source-units", "in", "--units", "cm"]
    assert bv.main([*args, "--up", "Z"]) == 0
    assert_same_motion("pymo_walk.bvh", out, 2.54, "Z", "stride")
    with pytest.raises(SystemExit):
        bv.main([str(FIXTURES / "pymo_walk.bvh"), str(out), "--units", "cm"])  # the source's units unsaid


@pytest.mark.parametrize("rest", bv.RESTS)
@pytest.mark.parametrize("name", CLIPS)
def test_the_variant_reads_back_with_the_sources_joints_and_channels(tmp_path, name, rest):
    out, _ = written(tmp_path, name, rest=rest, up="Z")
    clip, back = source(name), bv.read(out)
    assert back.names == clip.names and back.parents == clip.parents
    assert back.channels == clip.channels  # the layout and every rotation order as written
    assert back.children == clip.children and back.end_parents == clip.end_parents
    assert back.frame_time == clip.frame_time
    assert len(back.motion) == len(clip.motion) + (rest == "axis")


@pytest.mark.parametrize("name", CLIPS)
def test_apose_points_the_upper_arms_45_degrees_down(name):
    clip = source(name)
    out = bv.variant(clip, "apose")
    upper = bv.arms(clip)
    assert len(upper) == 2
    assert all(re.search(r"arm|shoulder", clip.names[u], re.IGNORECASE) for u in upper)
    rest_at = bv.rest_positions(clip)
    sides = []
    for u in upper:
        hand = next(j for j in bv._descendants(clip, u) if bv.HAND.search(bv._role_name(clip.names[j])))
        forearm = bv._toward(clip, u, hand)
        direction = unit(out.offsets[forearm])
        assert direction[1] == pytest.approx(-np.sin(np.radians(45.0)), abs=1e-6)  # 45° below the horizontal
        assert direction[2] == pytest.approx(0.0, abs=1e-6)  # in the frontal plane
        assert np.sign(direction[0]) == np.sign(rest_at[u][0] - rest_at[0][0])  # outward
        sides.append(np.sign(direction[0]))
        # the whole arm turned as one: the angles between its bones kept
        s = bv.rest_swings(clip, "apose")
        arm = bv._descendants(clip, u)
        assert np.allclose(s[arm], s[u])
        assert np.allclose(out.offsets[arm[1:]], (s[u] @ clip.offsets[arm[1:], :, None])[..., 0])
    assert sorted(sides) == [-1.0, 1.0]
    others = [j for j in range(len(clip.names)) if all(j not in bv._descendants(clip, u)[1:] for u in upper)]
    assert np.allclose(out.offsets[others], clip.offsets[others])  # the rest of the body stands as it stood


@pytest.mark.parametrize("axis", [(0.0, 1.0, 0.0), (0.0, 0.0, -1.0)])
@pytest.mark.parametrize("name", CLIPS)
def test_axis_lays_every_single_child_bone_along_the_axis(name, axis):
    clip = source(name)
    out = bv.variant(clip, "axis", axis=axis)
    laid = 0
    for j in range(len(clip.names)):
        bone = out.bone(j)
        if bone is not None and np.linalg.norm(bone) > bv.TINY:
            assert unit(bone) == pytest.approx(np.array(axis), abs=1e-9), clip.names[j]
            assert np.linalg.norm(bone) == pytest.approx(np.linalg.norm(clip.bone(j)))
            laid += 1
    assert laid >= len(clip.names) // 2
    assert np.allclose(out.motion[0, :3], clip.offsets[0])  # the prepended rest frame: the root at its offset


@pytest.mark.parametrize("name", CLIPS)
def test_stride_takes_the_legs_rest_from_the_middle_frame(name):
    clip = source(name)
    out = bv.variant(clip, "stride")
    world, _ = bv.forward(clip)
    k = len(clip.motion) // 2
    legs = [j for j in range(len(clip.names)) if LEGS.search(bv._role_name(clip.names[j])) and clip.bone(j) is not None]
    assert len(legs) >= 4
    turned = [degrees_between(out.bone(j), clip.bone(j)) for j in legs]
    assert max(turned) > 10.0, turned
    for j in legs:  # the new rest direction: the bone's world direction on frame k, the root's turn taken out
        assert unit(out.bone(j)) == pytest.approx(unit(world[k, 0].T @ world[k, j] @ clip.bone(j)), abs=1e-9)


def test_import_axes_stand_the_z_up_variant_as_blender_stands_the_source():
    """axis_conversion(from_forward, from_up) takes from_forward to +Y and from_up to +Z: with the
    defaults ('-Z', 'Y') it is G itself, with the Z-up variant's axes the identity."""
    def conversion(forward: str, up: str) -> np.ndarray:
        def vector(axis: str) -> np.ndarray:
            return (-1.0 if axis.startswith("-") else 1.0) * np.eye(3)["XYZ".index(axis[-1])]
        f, u = vector(forward), vector(up)
        return np.array([np.cross(f, u), f, u])  # rows: what goes to X, Y and Z

    y, z = bv.import_axes("Y"), bv.import_axes("z")
    assert (y["axis_forward"], y["axis_up"]) == ("-Z", "Y") and (z["axis_forward"], z["axis_up"]) == ("Y", "Z")
    assert np.allclose(conversion(y["axis_forward"], y["axis_up"]), bv.G_UP_Z)
    assert np.allclose(conversion(z["axis_forward"], z["axis_up"]) @ bv.G_UP_Z, conversion(y["axis_forward"],
                                                                                           y["axis_up"]))
    with pytest.raises(ValueError):
        bv.import_axes("X")


vectors = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 3).filter(lambda v: np.linalg.norm(v) > 1e-3)


@settings(max_examples=60, deadline=None)
@given(vectors, vectors, st.booleans())
def test_the_swing_is_the_smallest_turn_even_between_opposite_directions(a, b, opposite):
    b = tuple(-x for x in a) if opposite else b
    s = bv.swing(a, b)
    assert np.allclose(s @ s.T, np.eye(3), atol=1e-9) and np.linalg.det(s) == pytest.approx(1.0)
    assert s @ unit(a) == pytest.approx(unit(b), abs=1e-9)
    assert (np.trace(s) - 1.0) / 2.0 == pytest.approx(unit(a) @ unit(b), abs=1e-9)  # turned by the angle between


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]),
       st.tuples(*[st.floats(-3.0, 3.0, allow_nan=False)] * 3), st.tuples(*[st.floats(-9.0, 9.0)] * 3))
def test_euler_angles_read_back_the_rotation(order, angles, near):
    r = bv.euler_matrix(np.array(angles), order)
    back = bv.euler_angles(r, order, np.array(near))
    assert np.allclose(bv.euler_matrix(back, order), r, atol=1e-9)
    assert np.all(np.abs(back - np.array(near)) <= np.pi + 1e-9)  # the 2π multiple nearest ``near``
