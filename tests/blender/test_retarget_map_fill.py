"""The retarget map on real rigs: ``retarget_map_fill`` from a fixture clip imported with
Blender's BVH importer onto the metarig and a generated Rigify rig, what it says it could not
map, its refusals (nothing changed), and the map saved in the .blend."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip

from welman_ik.blender.rig.retarget_map import bone_tree


def _map(obj) -> list[tuple]:
    return [(line.target_bone, line.source_bone, line.kind, line.weight) for line in obj.welman_ik.retarget_map]


def _clip_and_target(clip: str, target_factory):
    """(target armature, source armature name): the clip imported, then the target made active."""
    scenes.empty_scene()
    import_clip(clip)
    source = bpy.context.object.name
    bpy.ops.object.mode_set(mode="OBJECT")
    target = target_factory()
    return target, source


# Each fixture clip's own names: (prefix, hand, forearm, foot, hips).
CLIP_NAMES = {
    "mocapbank_clip.bvh": ("", "Wrist", "Elbow", "Ankle", "Hips"),
    "mixamo_clip.bvh": ("mixamorig:", "Hand", "ForeArm", "Foot", "mixamorig:Hips"),
    "pymo_walk.bvh": ("", "Hand", "ForeArm", "Foot", "Hips"),
}


@pytest.mark.parametrize("clip", sorted(CLIP_NAMES))
def test_fill_from_each_fixture_clip_onto_the_metarig(clip):
    prefix, hand, forearm, foot, hips = CLIP_NAMES[clip]
    target, source = _clip_and_target(clip, lambda: scenes.basic_human(pins=()))
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    lines = _map(target)
    by_target = {t: (s, kind) for t, s, kind, _ in lines}
    assert len(by_target) == len(lines)  # each target bone once
    source_bones = set(bone_tree(bpy.data.objects[source])[0])
    assert all(t in target.pose.bones and s in source_bones for t, s, _, _ in lines)
    # The limbs follow the same limb on the same side; the hands and feet in pose.
    for side, word in (("L", "Left"), ("R", "Right")):
        assert by_target[f"hand.{side}"] == (f"{prefix}{word}{hand}", "POSE")
        assert by_target[f"forearm.{side}"] == (f"{prefix}{word}{forearm}", "ORIENTATION")
        assert by_target[f"foot.{side}"] == (f"{prefix}{word}{foot}", "POSE")
    assert by_target["spine"] == (hips, "POSE")  # the metarig's root follows the clip's root
    assert by_target["spine.006"][1] == "POSE"  # the head
    assert all(w == 1.0 for *_, w in lines)


def test_fill_onto_a_generated_rigify_rig():
    target, source = _clip_and_target("mocapbank_clip.bvh", scenes.generated_rigify)
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    by_target = {t: (s, kind) for t, s, kind, _ in _map(target)}
    assert by_target["torso"] == ("Hips", "POSE")
    # The rig's switches say IK: its IK hands and feet follow, its FK limbs are left alone.
    assert by_target["hand_ik.R"] == ("RightWrist", "POSE") and by_target["foot_ik.L"] == ("LeftAnkle", "POSE")
    assert not {"upper_arm_fk.L", "hand_fk.R", "thigh_fk.L"} & by_target.keys()
    # With the left arm switched to FK, its FK controls follow instead.
    target.pose.bones["upper_arm_parent.L"]["IK_FK"] = 1.0
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    by_target = {t: (s, kind) for t, s, kind, _ in _map(target)}
    assert by_target["upper_arm_fk.L"] == ("LeftShoulder", "ORIENTATION")  # this clip's Shoulder is the upper arm
    assert by_target["hand_fk.L"] == ("LeftWrist", "POSE") and "hand_ik.L" not in by_target
    assert by_target["hand_ik.R"] == ("RightWrist", "POSE")


@pytest.mark.once
@pytest.mark.parametrize("rigify", [False, True], ids=["human metarig", "its generated rig"])
def test_fingers_and_toes_follow_the_same_fingers_and_toes(rigify):
    """Mixamo's hands onto the Rigify human metarig and the rig generated from it: each finger's
    three segments and the thumb's follow the same finger's, in the world, through the
    retarget; on the generated rig with its legs in IK, the toes by the IK toe control (the
    one that moves them then)."""
    from retarget_gates import pose_matrices

    factory = (lambda: scenes.generated_rigify(metarig=scenes.human)) if rigify else (lambda: scenes.human(pins=()))
    target, source = _clip_and_target("mixamo_clip.bvh", factory)
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    by_target = {t: s for t, s, _, _ in _map(target)}
    m = "mixamorig:"
    for side, word in (("L", "Left"), ("R", "Right")):
        for finger, named in (("thumb", "Thumb"), ("f_index", "Index"), ("f_middle", "Middle"), ("f_ring", "Ring"),
                              ("f_pinky", "Pinky")):
            for segment in (1, 2, 3):
                assert by_target[f"{finger}.0{segment}.{side}"] == f"{m}{word}Hand{named}{segment}"
        assert by_target[f"toe_ik.{side}" if rigify else f"toe.{side}"] == f"{m}{word}ToeBase"
    frames = list(range(1, 31))
    assert bpy.ops.welman_ik.retarget(source=source, frame_start=1, frame_end=30) == {"FINISHED"}
    assert target.welman_ik.last_solve.converged, target.welman_ik.last_solve.message
    pairs = [(t, s) for t, s in by_target.items() if "f_" in t or "thumb" in t or "toe" in t]
    shown = [("DEF-" + t.replace("_ik", "")) if rigify else t for t, _ in pairs]
    pose_t, world_t = pose_matrices(target, shown, frames)
    pose_s, world_s = pose_matrices(bpy.data.objects[source], [s for _, s in pairs], frames)
    along_t = (world_t[:, None] @ pose_t)[..., :3, 1]
    along_s = (world_s[:, None] @ pose_s)[..., :3, 1]
    cos = np.einsum("fbi,fbi->fb", along_t, along_s) / (np.linalg.norm(along_t, axis=-1) * np.linalg.norm(along_s, axis=-1))
    off = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).max(axis=0)
    toes = np.array(["toe" in name for name in shown])
    assert off[~toes].max() <= 3.0, shown[int(np.argmax(np.where(toes, 0.0, off)))]
    assert off[toes].max() <= 10.0  # (a toe turns with its foot, which the plants pitch)


def test_what_could_not_be_mapped_is_left_out():
    """The mocapbank clip has no toes: the map is filled without them (the core's tests check
    the words that name them)."""
    target, source = _clip_and_target("mocapbank_clip.bvh", lambda: scenes.basic_human(pins=()))
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    mapped = {line.target_bone for line in target.welman_ik.retarget_map}
    assert {"hand.L", "foot.R"} <= mapped and not {"toe.L", "toe.R"} & mapped


@pytest.mark.parametrize("case", ["empty", "missing", "mesh", "self", "unknown"])
def test_refusals_change_nothing(human, case):
    before = [("a", "b", "POSE", 2.0)]
    line = human.welman_ik.retarget_map.add()
    line.target_bone, line.source_bone, line.kind, line.weight = before[0]
    source = {"empty": "", "missing": "no such object", "self": human.name}.get(case, case)
    if case == "mesh":
        mesh = bpy.data.objects.new("mesh", bpy.data.meshes.new("mesh"))
        bpy.context.scene.collection.objects.link(mesh)
    if case == "unknown":  # an armature whose bones name no body part
        data = bpy.data.armatures.new("odd")
        odd = bpy.data.objects.new("unknown", data)
        bpy.context.scene.collection.objects.link(odd)
        bpy.context.view_layer.objects.active = odd
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.ops.object.mode_set(mode="EDIT")
        for i, name in enumerate(("qa", "qb", "qc")):
            bone = data.edit_bones.new(name)
            bone.head, bone.tail = (0.0, 0.0, i), (0.0, 0.0, i + 1.0)
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = human
        bpy.ops.object.mode_set(mode="POSE")
    expected = {"empty": "Name the source armature", "missing": "No object named 'no such object'",
                "mesh": "'mesh' is not an armature", "self": "is the armature being retargeted onto",
                "unknown": "Nothing to map: source: its bone names follow no naming known here"}[case]
    with pytest.raises(RuntimeError, match=expected):
        bpy.ops.welman_ik.retarget_map_fill(source=source)
    assert _map(human) == before


def test_the_map_is_saved_in_the_blend(tmp_path):
    target, source = _clip_and_target("mixamo_clip.bvh", lambda: scenes.basic_human(pins=()))
    assert bpy.ops.welman_ik.retarget_map_fill(source=source) == {"FINISHED"}
    target.welman_ik.retarget_map[0].weight = 0.5  # an edit by hand
    saved, name = _map(target), target.name
    path = tmp_path / "mapped.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    assert _map(bpy.data.objects[name]) == saved
    assert saved[0][3] == 0.5


def test_the_automatic_scale_is_the_ratio_of_leg_lengths():
    """Hip to knee to ankle in the world (the same bent or straight), each rig's mean over its two
    legs: the metarig against the clip (imported in metres), and again with the metarig's object
    scaled by 2."""
    from welman_ik.blender.rig.retarget_map import rest_points, retarget_scale

    target, source = _clip_and_target("pymo_walk.bvh", lambda: scenes.basic_human(pins=()))
    clip = bpy.data.objects[source]
    mine, theirs = rest_points(target), rest_points(clip)

    def leg(points, thigh, shin, foot):
        return float(np.linalg.norm(points[thigh][0] - points[shin][0])
                     + np.linalg.norm(points[shin][0] - points[foot][0]))

    expected = ((leg(mine, "thigh.L", "shin.L", "foot.L") + leg(mine, "thigh.R", "shin.R", "foot.R"))
                / (leg(theirs, "LeftUpLeg", "LeftLeg", "LeftFoot") + leg(theirs, "RightUpLeg", "RightLeg", "RightFoot")))
    scale = retarget_scale(target, clip)
    assert scale == pytest.approx(expected, rel=1e-9)
    assert 0.5 < scale < 2.0  # two adult bodies
    target.scale = (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    assert retarget_scale(target, clip) == pytest.approx(2.0 * scale, rel=1e-6)


def test_no_automatic_scale_without_legs(human):
    from welman_ik.blender.rig.model import RigError
    from welman_ik.blender.rig.retarget_map import retarget_scale

    data = bpy.data.armatures.new("armless")
    odd = bpy.data.objects.new("legless", data)
    bpy.context.scene.collection.objects.link(odd)
    with pytest.raises(RigError, match="give the scale instead"):
        retarget_scale(human, odd)
