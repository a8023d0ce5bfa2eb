"""The BVH writer (``welman_ik.cleanup.bvh``): a clip written back in its source's own format,
read back by Blender's importer, stands as the armature stood."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import CLIP_SCALES, FIXTURES, import_clip

from welman_ik.blender.rig import keyframes
from welman_ik.cleanup import bvh
from welman_ik.core.euler import euler_matrix

CLIPS = ("mocapbank_clip.bvh", "pymo_walk.bvh", "mixamo_clip.bvh")
LEGS = {  # a thigh and its shin
    "mocapbank_clip.bvh": ("LeftHip", "LeftKnee"),
    "pymo_walk.bvh": ("LeftUpLeg", "LeftLeg"),
    "mixamo_clip.bvh": ("mixamorig:LeftUpLeg", "mixamorig:LeftLeg"),
}


def scale_of(name: str) -> float:
    return CLIP_SCALES.get(name, 0.01)


def import_file(path, **options):
    """A BVH file in a fresh scene, through Blender's importer with ``options`` (else its defaults)."""
    import addon_utils

    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    assert bpy.ops.import_anim.bvh(filepath=str(path), **options) == {"FINISHED"}
    return bpy.context.object


def sample(obj, frames) -> np.ndarray:
    """(frames, bones, 2, 3) every bone's evaluated world head and tail on ``frames``."""
    scene = bpy.context.scene
    bones = obj.pose.bones
    out = np.empty((len(frames), len(bones), 2, 3))
    buffer = np.empty(len(bones) * 3, np.float32)
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        world = np.array(obj.matrix_world)
        for k, end in enumerate(("head", "tail")):
            bones.foreach_get(end, buffer)
            out[i, :, k] = buffer.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]
    return out


def clip_frames(name: str) -> range:
    return range(1, 1 + len(bvh.parse((FIXTURES / name).read_text()).motion))


def rotation(values_deg: np.ndarray, channels: list[str]) -> np.ndarray:
    """(frames, 3, 3) the rotation of a joint's rotation channels ``values_deg`` (frames, 3)."""
    order = "".join(c[0].upper() for c in channels if c.lower().endswith("rotation"))
    return euler_matrix(np.radians(values_deg), order)


@pytest.mark.parametrize("name", CLIPS)
def test_an_unchanged_clip_is_written_as_its_source(name, tmp_path):
    source = FIXTURES / name
    obj = import_clip(name)
    frames = clip_frames(name)
    out = tmp_path / name
    bvh.write(obj, source, out, scale_of(name), frames)
    text, written = source.read_bytes(), out.read_bytes()
    cut = text.index(b"Frame Time:")
    cut = text.index(b"\n", cut) + 1
    assert written[:cut] == text[:cut]
    before, after = bvh.parse(source.read_text()), bvh.parse(out.read_text())
    assert after.motion.shape == before.motion.shape == (len(frames), before.motion.shape[1])
    assert np.abs(after.motion - before.motion).max() <= 1e-4
    assert (after.tokens == before.tokens).all()  # verbatim
    assert written == text


@pytest.mark.parametrize("name", CLIPS)
def test_every_channel_derived_anew_matches_the_source(name, tmp_path, monkeypatch):
    """Every value computed from the pose (none copied): the same rotations and positions as
    the source's, and, read with the importer's own defaults (global_scale=1), a body of the
    source's size on every frame along every axis."""
    monkeypatch.setattr(bvh, "ROTATION_TOLERANCE", -1.0)
    monkeypatch.setattr(bvh, "POSITION_TOLERANCE", -1.0)
    source = FIXTURES / name
    obj = import_clip(name)
    frames = clip_frames(name)
    out = tmp_path / name
    bvh.write(obj, source, out, scale_of(name), frames)
    before, after = bvh.parse(source.read_text()), bvh.parse(out.read_text())
    assert (after.tokens != before.tokens).any()  # written anew, not copied
    # the source's own Euler solution on every frame (of the two, and of 2-pi multiples);
    # near gimbal lock single precision leaves 5e-3 degrees on the angles, 1e-3 on the rotation
    assert np.abs(after.motion - before.motion).max() <= 0.01
    for j, channels in enumerate(before.channels):
        cols = before.columns(j)
        moved = [c for c, n in zip(cols, channels, strict=True) if n.lower().endswith("position")]
        turns = [c for c, n in zip(cols, channels, strict=True) if n.lower().endswith("rotation")]
        assert np.abs(after.motion[:, moved] - before.motion[:, moved]).max(initial=0.0) <= 1e-3
        if turns:
            difference = rotation(before.motion[:, turns], channels).swapaxes(1, 2) @ rotation(
                after.motion[:, turns], channels)
            assert np.abs(difference - np.eye(3)).max() <= 2e-5, before.names[j]  # ~1e-3 degrees

    sizes = []
    for path in (source, out):
        sizes.append(np.ptp(sample(import_file(path), frames)[:, :, 0], axis=1))  # heads
    assert np.abs(sizes[0] - sizes[1]).max() <= 0.01  # file units


def modify(obj, name: str) -> None:
    """A thigh and its shin turned by 15-30 degrees about mixed axes on every frame, and the
    root moved, through the imported action's F-curves. The turns change the first and last
    angles of each bone's Euler order, not the middle one: where that nears 90 degrees (gimbal
    lock), Blender's importer, in single precision, reads a file back up to 1e-4 m off."""
    thigh, shin = LEGS[name]
    root = obj.data.bones[0].name
    changes = {
        (thigh, 0): lambda f: np.radians(25.0) + 0.1 * np.sin(f / 7.0),
        (thigh, 2): lambda f: np.radians(-20.0) + 0 * f,
        (shin, 0): lambda f: np.radians(30.0) * np.cos(f / 11.0),
        (shin, 2): lambda f: np.radians(15.0) + 0 * f,
        (root, "x"): lambda f: 0.05 + 0.02 * np.sin(f / 5.0),
        (root, "y"): lambda f: -0.03 + 0 * f,
        (root, "z"): lambda f: 0.1 * np.cos(f / 9.0),
    }
    fcurves = {(c.data_path, c.array_index): c for c in keyframes.action_fcurves(obj)}
    for (bone, which), change in changes.items():
        if isinstance(which, str):
            key = (f'pose.bones["{bone}"].location', "xyz".index(which))
        else:  # the first or last axis of the bone's Euler order
            key = (f'pose.bones["{bone}"].rotation_euler', "XYZ".index(obj.pose.bones[bone].rotation_mode[which]))
        curve = fcurves[key]
        co = np.empty(len(curve.keyframe_points) * 2)
        curve.keyframe_points.foreach_get("co", co)
        co[1::2] += change(co[0::2])
        curve.keyframe_points.foreach_set("co", co)
        curve.update()


@pytest.mark.parametrize("name", CLIPS)
def test_a_changed_clip_reads_back_as_it_stood(name, tmp_path):
    source = FIXTURES / name
    obj = import_clip(name)
    frames = clip_frames(name)
    original = sample(obj, frames)
    modify(obj, name)
    changed = sample(obj, frames)
    assert np.abs(changed - original).max() > 0.05  # the change is real
    names = [b.name for b in obj.data.bones]
    out = tmp_path / name
    bvh.write(obj, source, out, scale_of(name), frames)

    back = import_file(out, global_scale=scale_of(name))
    assert [b.name for b in back.data.bones] == names
    error = np.abs(sample(back, frames) - changed).max()
    assert error <= 1e-5, f"{name}: {error:.2e} m"

    before, after = bvh.parse(source.read_text()), bvh.parse(out.read_text())
    assert after.channels == before.channels
    assert [len(c) for c in after.channels] == [6] + [3] * (len(before.names) - 1)
    assert after.motion.shape == before.motion.shape
    touched = {names[0], *LEGS[name]}
    for j, joint in enumerate(before.names):
        cols = before.columns(j)
        same = (after.tokens[:, cols] == before.tokens[:, cols]).all()
        assert same == (joint not in touched), joint  # the others copied verbatim

    # Read with the importer's own defaults (global_scale=1): the body's size, in file units.
    # (Heads only: the importer makes up tails for zero-length bones, by a rule that depends on the scale.)
    sizes = np.ptp(sample(import_file(out), frames)[:, :, 0], axis=1)
    expected = np.ptp(changed[:, :, 0], axis=1) / scale_of(name)
    assert np.abs(sizes - expected).max() <= 0.01


def test_a_file_that_is_not_a_bvh_is_refused(tmp_path):
    obj = import_clip("mocapbank_clip.bvh")
    bogus = tmp_path / "notes.bvh"
    bogus.write_text("These are not motion capture data.\n")
    with pytest.raises(ValueError, match="not a BVH file"):
        bvh.write(obj, bogus, tmp_path / "out.bvh", 0.01, range(1, 3))
    assert not (tmp_path / "out.bvh").exists()
    text = (FIXTURES / "mocapbank_clip.bvh").read_text()
    with pytest.raises(ValueError, match="MOTION"):
        bvh.parse(text[:text.index("MOTION")])
    with pytest.raises(ValueError, match="frame 455 has 3 values for 60 channels"):
        bvh.parse(text.rstrip() + "\n1.0 2.0 3.0\n")
    obj.data.bones["LeftKnee"].name = "Knee"
    with pytest.raises(ValueError, match="no bone 'LeftKnee' for the BVH joint 'LeftKnee'"):
        bvh.write(obj, FIXTURES / "mocapbank_clip.bvh", tmp_path / "out.bvh", 0.01, range(1, 3))


def synthetic(path, frames: int = 12) -> None:
    """A small BVH of the rarer kinds: position channels on a joint, three rotation orders, a
    repeated joint name (the importer's ".001"), a name past Blender's 63 bytes, tab-separated."""
    long = "LeftHandThumbMetacarpal_" * 3  # 72 bytes (Blender's importer fails on a non-ASCII one cut)
    path.write_text(
        "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 90 0\n"
        "\tCHANNELS 6 Xposition Yposition Zposition Yrotation Zrotation Xrotation\n"
        "\tJOINT Spine\n\t{\n\t\tOFFSET 0 10 2\n"
        "\t\tCHANNELS 6 Zrotation Xposition Yposition Zposition Xrotation Yrotation\n"
        "\t\tJOINT Spine\n\t\t{\n\t\t\tOFFSET 1 15 -1\n\t\t\tCHANNELS 3 Xrotation Zrotation Yrotation\n"
        f"\t\t\tJOINT {long}\n\t\t\t{{\n\t\t\t\tOFFSET 0 12 3\n\t\t\t\tCHANNELS 3 Yrotation Xrotation Zrotation\n"
        "\t\t\t\tEnd Site\n\t\t\t\t{\n\t\t\t\t\tOFFSET 0 8 0\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n}\n"
        f"MOTION\nFrames: {frames}\nFrame Time: 0.04\n"
        + "".join("\t".join(f"{v:.3f}" for v in row) + "\n" for row in _synthetic_motion(frames)),
        encoding="utf-8")


def _synthetic_motion(frames: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    t = np.arange(frames)[:, None]
    motion = np.hstack([
        [3, 90, -2] + 5 * np.sin(t / 3 + np.arange(3)), 40 * np.sin(t / 4 + np.arange(3)),  # Hips
        20 * np.sin(t / 5), [0, 10, 2] + 2 * np.cos(t / 2 + np.arange(3)),  # Spine
        30 * np.cos(t / 6 + np.arange(2)), 50 * np.sin(t / 5 + np.arange(6)) + rng.normal(0, 5, (frames, 6)),
    ])
    return motion


def test_positions_on_a_joint_orders_and_names(tmp_path):
    """Position channels on a non-root joint, rotation orders YZX, XZY and YXZ, a repeated name
    and a name Blender shortens: unchanged, the file comes back byte for byte; changed (the
    joint's position, a rotation), it reads back as the armature stood."""
    source = tmp_path / "synthetic.bvh"
    synthetic(source)
    frames = range(1, 13)
    obj = import_file(source, global_scale=0.01)
    bones = [b.name for b in obj.data.bones]
    assert bones[2] == "Spine.001" and bones[3] == ("LeftHandThumbMetacarpal_" * 3)[:63], bones
    out = tmp_path / "same.bvh"
    bvh.write(obj, source, out, 0.01, frames)
    assert out.read_bytes() == source.read_bytes()

    fcurves = {(c.data_path, c.array_index): c for c in keyframes.action_fcurves(obj)}
    for key, change in {('pose.bones["Spine"].location', 1): 0.05, ('pose.bones["Spine"].location', 2): -0.03,
                        ('pose.bones["Spine.001"].rotation_euler', 0): 0.4,
                        ('pose.bones["Spine.001"].rotation_euler', 1): -0.3}.items():
        curve = fcurves[key]
        co = np.empty(len(curve.keyframe_points) * 2)
        curve.keyframe_points.foreach_get("co", co)
        co[1::2] += change
        curve.keyframe_points.foreach_set("co", co)
        curve.update()
    changed = sample(obj, frames)
    out = tmp_path / "changed.bvh"
    bvh.write(obj, source, out, 0.01, frames)
    back = import_file(out, global_scale=0.01)
    assert [b.name for b in back.data.bones] == bones
    assert np.abs(sample(back, frames) - changed).max() <= 1e-5
    before, after = bvh.parse(source.read_text(encoding="utf-8")), bvh.parse(out.read_text(encoding="utf-8"))
    assert after.style == before.style == ("", "\t", "")
    assert [(after.tokens[:, before.columns(j)] == before.tokens[:, before.columns(j)]).all()
            for j in range(4)] == [True, False, False, True]
