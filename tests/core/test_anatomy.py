"""Human joint ranges without Blender: naming recognition, and every joint's range frame found
from the rest geometry whatever the bones' roll, with left and right mirrored."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from fixture_skeletons import bvh_joints

from welman_ik.core import anatomy
from welman_ik.core.ranges import rotation_y, swing_twist

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UP, FORWARD, LEFT = np.array([0.0, 0.0, 1.0]), np.array([0.0, -1.0, 0.0]), np.array([1.0, 0.0, 0.0])


def rotation(axis, angle: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * k @ k


def bone_matrix(head, tail, roll: float) -> np.ndarray:
    """A rest matrix as Blender builds one: Y from head to tail, turned by ``roll`` about Y."""
    y = np.asarray(tail, dtype=float) - np.asarray(head, dtype=float)
    y /= np.linalg.norm(y)
    m = np.eye(4)
    m[:3, :3] = anatomy.transport(np.array([0.0, 1.0, 0.0]), y, np.array([0.0, 0.0, 1.0])) @ rotation_y(roll)
    m[:3, 3] = head
    return m


def skeleton(arms: str = "T", knee_bend: float = 0.0, thumbs: bool = True) -> dict:
    """A human facing -Y, Z up, its left on +X: {role: (head, tail, parent role)}. ``arms``
    'T' (T-pose), 'A' (45 degrees down) or 'DOWN' (hanging); ``knee_bend`` [rad] of rest flexion."""
    joints = {
        "hips": ((0, 0, 1.0), (0, 0, 1.1), None),
        "spine": ((0, 0, 1.1), (0, 0, 1.25), "hips"),
        "spine1": ((0, 0, 1.25), (0, 0.01, 1.38), "spine"),
        "spine2": ((0, 0.01, 1.38), (0, 0.01, 1.5), "spine1"),
        "neck": ((0, 0.01, 1.5), (0, -0.01, 1.6), "spine2"),
        "head": ((0, -0.01, 1.6), (0, -0.01, 1.8), "neck"),
    }
    for side, s in (("L", 1.0), ("R", -1.0)):
        shoulder = np.array([0.18 * s, 0.0, 1.45])
        direction = {"T": np.array([s, 0.0, 0.0]), "A": np.array([s, 0.0, -1.0]) / math.sqrt(2.0),
                     "DOWN": np.array([0.02 * s, 0.0, -1.0])}[arms]
        direction = direction / np.linalg.norm(direction)
        elbow, wrist = shoulder + 0.28 * direction, shoulder + 0.54 * direction
        hand_tail = wrist + 0.08 * direction
        # The thumb on the radial side: forward in these poses (palms down, down-in, or in).
        thumb = wrist + 0.02 * direction + np.array([0.0, -0.03, 0.0])
        hip = np.array([0.1 * s, 0.0, 1.0])
        knee = hip + np.array([0.0, 0.0, -0.45])
        ankle = knee + 0.45 * np.array([0.0, math.sin(knee_bend), -math.cos(knee_bend)])
        joints.update({
            f"clavicle.{side}": ((0.04 * s, 0.0, 1.45), tuple(shoulder), "spine2"),
            f"upper_arm.{side}": (tuple(shoulder), tuple(elbow), f"clavicle.{side}"),
            f"forearm.{side}": (tuple(elbow), tuple(wrist), f"upper_arm.{side}"),
            f"hand.{side}": (tuple(wrist), tuple(hand_tail), f"forearm.{side}"),
            f"finger1.{side}": (tuple(hand_tail), tuple(hand_tail + 0.04 * direction), f"hand.{side}"),
            f"finger2.{side}": (tuple(hand_tail + 0.04 * direction), tuple(hand_tail + 0.07 * direction),
                                f"finger1.{side}"),
            f"thigh.{side}": (tuple(hip), tuple(knee), "hips"),
            f"shin.{side}": (tuple(knee), tuple(ankle), f"thigh.{side}"),
            f"foot.{side}": (tuple(ankle), tuple(ankle + np.array([0.0, -0.12, -0.07])), f"shin.{side}"),
            f"toe.{side}": (tuple(ankle + np.array([0.0, -0.12, -0.07])), tuple(ankle + np.array([0.0, -0.2, -0.07])),
                            f"foot.{side}"),
        })
        if thumbs:
            joints[f"thumb1.{side}"] = (tuple(thumb), tuple(thumb + 0.03 * direction + np.array([0, -0.02, 0])),
                                        f"hand.{side}")
    return joints


MIXAMO = {
    "hips": "Hips", "spine": "Spine", "spine1": "Spine1", "spine2": "Spine2", "neck": "Neck", "head": "Head",
    "clavicle": "Shoulder", "upper_arm": "Arm", "forearm": "ForeArm", "hand": "Hand", "finger1": "HandIndex1",
    "finger2": "HandIndex2", "thumb1": "HandThumb1", "thigh": "UpLeg", "shin": "Leg", "foot": "Foot",
    "toe": "ToeBase",
}
BIOVISION = {
    "hips": "Hips", "spine": "Chest", "spine1": "Chest2", "spine2": "Chest3", "neck": "Neck", "head": "Head",
    "clavicle": "Collar", "upper_arm": "Shoulder", "forearm": "Elbow", "hand": "Wrist", "thigh": "Hip",
    "shin": "Knee", "foot": "Ankle", "toe": "Toe",
}
METARIG = {
    "hips": "spine", "spine": "spine.001", "spine1": "spine.002", "spine2": "spine.003", "neck": "spine.004",
    "head": "spine.005", "clavicle": "shoulder", "upper_arm": "upper_arm", "forearm": "forearm", "hand": "hand",
    "finger1": "f_index.01", "finger2": "f_index.02", "thumb1": "thumb.01", "thigh": "thigh", "shin": "shin",
    "foot": "foot", "toe": "toe",
}


def named(joints: dict, naming: str, prefix: str = "", rolls=None) -> tuple[list, dict, dict, dict]:
    """(names, rest matrices, parents, {name: generic role}) of ``joints`` under ``naming``."""
    table = {"MIXAMO": MIXAMO, "BIOVISION": BIOVISION, "METARIG": METARIG}[naming]
    rename = {}
    for role in joints:
        base, _, side = role.partition(".")
        if base not in table:
            continue
        stem = table[base]
        if naming == "METARIG":
            rename[role] = f"{stem}.{side}" if side else stem
        else:
            rename[role] = prefix + ({"L": "Left", "R": "Right"}.get(side, "") + stem)
    rng = np.random.default_rng(7)
    names, rest, parents = [], {}, {}
    for role, (head, tail, parent) in joints.items():
        if role not in rename:
            continue
        name = rename[role]
        roll = rolls[role] if rolls is not None and role in rolls else float(rng.uniform(-math.pi, math.pi))
        names.append(name)
        rest[name] = bone_matrix(head, tail, roll)
        parents[name] = rename.get(parent) if parent else None
    return names, rest, parents, {v: k for k, v in rename.items()}


def tail_motion(rest: np.ndarray, limits: dict, axis: str, angle: float = 0.3) -> np.ndarray:
    """How the bone's tail direction moves for a swing of ``angle`` about the range's ``axis``."""
    x, y, z = anatomy.range_axes(limits["roll"], rest[:3, :3])
    return rotation({"x": x, "z": z}[axis], angle) @ y - y


# ------------------------------------------------------------------------------------------------
# Naming

def test_mixamo_fixture_is_recognised_with_shoulder_as_clavicle():
    names, parents = bvh_joints(FIXTURES / "mixamo_clip.bvh")
    naming, roles = anatomy.recognise(names, parents)
    assert naming == "MIXAMO"
    assert roles["mixamorig:LeftShoulder"] == "clavicle.L"
    assert roles["mixamorig:RightArm"] == "upper_arm.R"
    assert roles["mixamorig:LeftForeArm"] == "forearm.L"
    assert roles["mixamorig:LeftUpLeg"] == "thigh.L"
    assert roles["mixamorig:RightLeg"] == "shin.R"
    assert roles["mixamorig:LeftToeBase"] == "toe.L"
    assert roles["mixamorig:LeftHandIndex2"] == "finger2.L"
    assert roles["mixamorig:RightHandThumb1"] == "thumb1.R"
    assert roles["mixamorig:Spine2"] == "spine" and roles["mixamorig:Head"] == "head"
    assert "mixamorig:HeadTop_End" not in roles and "mixamorig:LeftEye" not in roles


def test_biovision_fixture_is_recognised_with_shoulder_as_upper_arm():
    names, parents = bvh_joints(FIXTURES / "mocapbank_clip.bvh")
    naming, roles = anatomy.recognise(names, parents)
    assert naming == "BVH"
    assert roles["LeftCollar"] == "clavicle.L"
    assert roles["LeftShoulder"] == "upper_arm.L"
    assert roles["RightElbow"] == "forearm.R"
    assert roles["LeftWrist"] == "hand.L"
    assert roles["LeftHip"] == "thigh.L" and roles["LeftKnee"] == "shin.L" and roles["RightAnkle"] == "foot.R"
    assert roles["Chest"] == roles["Chest2"] == "spine"


@pytest.mark.parametrize("prefix", ["", "Character1:", "mixamorig1:"])
def test_mixamo_without_or_with_another_prefix(prefix):
    names, _, parents, _ = named(skeleton(), "MIXAMO", prefix)
    naming, roles = anatomy.recognise(names, parents)
    assert naming == "MIXAMO"
    assert roles[f"{prefix}LeftShoulder"] == "clavicle.L"
    assert roles[f"{prefix}LeftArm"] == "upper_arm.L"


def test_cmu_is_bvh_and_its_shoulder_is_the_clavicle():
    names = ["Hips", "LHipJoint", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "RHipJoint", "RightUpLeg",
             "RightLeg", "RightFoot", "RightToeBase", "LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head",
             "LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand", "LeftFingerBase", "LeftHandIndex1", "LThumb",
             "RightShoulder", "RightArm", "RightForeArm", "RightHand", "RThumb"]
    naming, roles = anatomy.recognise(names)
    assert naming == "BVH"
    assert roles["LeftShoulder"] == "clavicle.L" and roles["LeftArm"] == "upper_arm.L"
    assert roles["LowerBack"] == roles["Spine1"] == "spine" and roles["Neck1"] == "neck"
    assert roles["LThumb"] == "thumb1.L" and roles["LeftHandIndex1"] == "finger1.L"
    assert "LHipJoint" not in roles


def test_metarig_spine_splits_into_neck_and_head_above_the_clavicles():
    names = ["spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005", "spine.006",
             "shoulder.L", "upper_arm.L", "forearm.L", "hand.L", "shoulder.R", "upper_arm.R", "thigh.L", "shin.L",
             "thigh.R", "f_index.01.L", "thumb.03.R", "palm.02.L", "heel.02.L", "breast.L", "face"]
    parents = {"spine": None, "shoulder.L": "spine.003", "shoulder.R": "spine.003"}
    parents.update({f"spine.00{i}": ("spine" if i == 1 else f"spine.00{i - 1}") for i in range(1, 7)})
    naming, roles = anatomy.recognise(names, parents)
    assert naming == "METARIG"
    assert [roles[f"spine.00{i}"] for i in range(1, 7)] == ["spine", "spine", "spine", "neck", "neck", "head"]
    assert roles["shoulder.L"] == "clavicle.L" and roles["f_index.01.L"] == "finger1.L"
    assert roles["thumb.03.R"] == "thumb3.R" and roles["palm.02.L"] == "palm.L"
    assert "heel.02.L" not in roles and "breast.L" not in roles and "face" not in roles


def test_generated_rigify_puts_roles_on_the_controls_only():
    names = ["root", "torso", "hips", "chest", "spine_fk", "spine_fk.001", "spine_fk.002", "spine_fk.003", "neck",
             "head", "shoulder.L", "upper_arm_fk.L", "forearm_fk.L", "hand_fk.L", "thigh_fk.L", "shin_fk.L",
             "foot_fk.L", "toe_fk.L", "upper_arm_ik.L", "thigh_ik.L", "foot_ik.L", "ORG-upper_arm.L", "DEF-shin.L",
             "MCH-spine", "tweak_spine", "f_middle.02.R", "thumb.01.L", "upper_arm_fk.R"]
    naming, roles = anatomy.recognise(names)
    assert naming == "RIGIFY"
    assert roles["upper_arm_fk.L"] == "upper_arm.L" and roles["shin_fk.L"] == "shin.L"
    assert roles["shoulder.L"] == "clavicle.L" and roles["toe_fk.L"] == "toe.L"
    assert roles["spine_fk.002"] == "spine" and roles["neck"] == "neck" and roles["head"] == "head"
    assert roles["hips"] == "hips" and roles["chest"] == "chest" and roles["torso"] == "torso"
    assert roles["f_middle.02.R"] == "finger2.R" and roles["thumb.01.L"] == "thumb1.L"
    for driven in ("upper_arm_ik.L", "thigh_ik.L", "foot_ik.L", "ORG-upper_arm.L", "DEF-shin.L", "MCH-spine",
                   "tweak_spine", "root"):
        assert driven not in roles


def test_unknown_naming_is_not_recognised_but_best_guess_matches_fragments():
    names = ["Pelvis", "Waist", "Chest_Bone", "NeckBone", "HeadBone", "Clavicle_L", "UpperArm_L", "LowerArm_L",
             "Hand_L", "Thigh_L", "Calf_L", "Foot_L", "Toe_L", "UpperArm_R", "Thigh_R", "Calf_R", "Prop_Sword"]
    parents = dict.fromkeys(names)
    assert anatomy.recognise(names, parents) == ("", {})
    naming, roles = anatomy.recognise(names, parents, best_guess=True)
    assert naming == "GUESS"
    assert roles["UpperArm_L"] == "upper_arm.L" and roles["LowerArm_L"] == "forearm.L"
    assert roles["Clavicle_L"] == "clavicle.L" and roles["Calf_R"] == "shin.R" and roles["Foot_L"] == "foot.L"
    assert roles["Waist"] == "spine" and roles["NeckBone"] == "neck" and roles["HeadBone"] == "head"
    assert "Prop_Sword" not in roles
    assert anatomy.recognise(["Cube", "Bone", "Bone.001"], best_guess=True) == ("", {})


@pytest.mark.parametrize("name, stem, side", [
    ("upper_arm.L", "upper_arm", "L"), ("f_index.01.R", "f_index.01", "R"), ("LeftForeArm", "ForeArm", "L"),
    ("RightHandThumb1", "HandThumb1", "R"), ("LThumb", "Thumb", "L"), ("lShldr", "Shldr", "L"),
    ("Hand_R", "Hand", "R"), ("spine.003", "spine.003", ""), ("LowerBack", "LowerBack", ""), ("Hips", "Hips", ""),
])
def test_split_side(name, stem, side):
    assert anatomy.split_side(name) == (stem, side)


# ------------------------------------------------------------------------------------------------
# Range frames from the rest geometry

ROLL_SETS = [None, "zero", "quarter"]


def _rolls(kind, joints):
    if kind is None:
        return None  # random per bone
    return dict.fromkeys(joints, 0.0 if kind == "zero" else math.pi / 2)


@pytest.mark.parametrize("arms", ["T", "A", "DOWN"])
@pytest.mark.parametrize("rolls", ROLL_SETS)
@pytest.mark.parametrize("naming", ["MIXAMO", "METARIG", "BIOVISION"])
def test_flexion_moves_each_joint_the_anatomical_way(naming, rolls, arms):
    joints = skeleton(arms, knee_bend=0.1)
    names, rest, parents, role_of = named(joints, naming, rolls=_rolls(rolls, joints))
    found, ranges = anatomy.human_ranges(names, rest, parents)
    assert found == ("BVH" if naming == "BIOVISION" else naming)
    by_role = {role_of[n]: n for n in ranges}
    for side in ("L", "R"):
        def flex(role, side=side):
            name = by_role[f"{role}.{side}"]
            return tail_motion(rest[name], ranges[name], "x")

        assert flex("shin") @ FORWARD < -0.2, "knee flexion carries the foot backward"
        assert flex("thigh") @ FORWARD > 0.2, "hip flexion carries the knee forward"
        assert flex("upper_arm") @ FORWARD > 0.2, "shoulder flexion carries the elbow forward"
        assert flex("forearm") @ FORWARD > 0.2, "elbow flexion carries the hand forward"
        assert flex("foot") @ UP < -0.1, "plantar flexion carries the toes down"
        assert flex("clavicle") @ FORWARD > 0.2, "protraction carries the shoulder forward"
        assert flex("toe") @ UP < -0.2, "toe flexion curls the toes down"
        if naming != "BIOVISION":
            # Finger flexion goes to the palm: down in a T-pose, down-in in an A-pose, inward when hanging.
            palm = {"T": -UP, "A": -UP - (LEFT if side == "L" else -LEFT), "DOWN": -LEFT if side == "L" else LEFT}
            assert flex("finger2") @ palm[arms] > 0.1
        # The hinges do not bend backward past straight; they bend a long way forward.
        for hinge, most in (("shin", 135), ("forearm", 150)):
            limits = ranges[by_role[f"{hinge}.{side}"]]
            bend = -limits["swing_x_min"]
            assert 0.0 <= bend <= 0.11
            assert math.degrees(limits["swing_x_max"] + bend) == pytest.approx(most, abs=0.5)
            assert abs(limits["swing_z_min"]) <= math.radians(5) and limits["swing_z_max"] <= math.radians(5)
    for role in ("spine", "spine1", "neck", "head"):
        name = next(n for n, r in role_of.items() if r == role)
        assert tail_motion(rest[name], ranges[name], "x") @ FORWARD > 0.2, f"{role} flexion bends forward"


@pytest.mark.parametrize("naming", ["MIXAMO", "METARIG"])
def test_ranges_do_not_depend_on_the_bone_roll(naming):
    joints = skeleton("A")
    results = []
    for seed_rolls in (_rolls("zero", joints), _rolls("quarter", joints), None):
        names, rest, parents, role_of = named(joints, naming, rolls=seed_rolls)
        _, ranges = anatomy.human_ranges(names, rest, parents)
        frames = {role_of[n]: anatomy.range_axes(r["roll"], rest[n][:3, :3]) for n, r in ranges.items()}
        bounds = {role_of[n]: [r[k] for k in anatomy_fields()] for n, r in ranges.items()}
        results.append((frames, bounds))
    for frames, bounds in results[1:]:
        for role in frames:
            np.testing.assert_allclose(np.array(frames[role]), np.array(results[0][0][role]), atol=1e-9)
            np.testing.assert_allclose(bounds[role], results[0][1][role], atol=1e-9)


def anatomy_fields():
    return ("swing_x_min", "swing_x_max", "swing_z_min", "swing_z_max", "twist_min", "twist_max")


def test_left_and_right_are_mirrored():
    """Each side's abduction bound (the swing_z bound that carries the tail outward) is the
    table's, and the left's equals the right's."""
    names, rest, parents, role_of = named(skeleton("DOWN"), "MIXAMO")
    _, ranges = anatomy.human_ranges(names, rest, parents)
    by_role = {role_of[n]: n for n in ranges}
    for role, abduction in (("thigh", 45), ("upper_arm", 180), ("clavicle", 45), ("foot", 10)):
        bounds = {}
        for side, lateral in (("L", LEFT), ("R", -LEFT)):
            name = by_role[f"{role}.{side}"]
            limits = ranges[name]
            # The swing_z bound that is abduction is the one whose direction carries the tail outward.
            outward_is_positive = tail_motion(rest[name], limits, "z") @ (UP if role == "clavicle" else lateral) > 0
            bounds[side] = limits["swing_z_max"] if outward_is_positive else -limits["swing_z_min"]
            assert math.degrees(bounds[side]) == pytest.approx(abduction, abs=3), (role, side)
        assert bounds["L"] == pytest.approx(bounds["R"], abs=1e-9), role


def test_internal_rotation_turns_the_front_inward_on_both_sides():
    names, rest, parents, role_of = named(skeleton("DOWN"), "MIXAMO")
    _, ranges = anatomy.human_ranges(names, rest, parents)
    by_role = {role_of[n]: n for n in ranges}
    for side, medial in (("L", -LEFT), ("R", LEFT)):
        for role, internal, front in (("upper_arm", 70, FORWARD), ("forearm", 80, FORWARD), ("foot", 35, -UP)):
            name = by_role[f"{role}.{side}"]
            limits = ranges[name]
            y = rest[name][:3, 1]
            front = front - (front @ y) * y
            turned = rotation(y, 0.2) @ front - front
            inward_is_positive = turned @ medial > 0
            bound = limits["twist_max"] if inward_is_positive else -limits["twist_min"]
            assert math.degrees(bound) == pytest.approx(internal, abs=0.01), (role, side)


def test_rest_pose_angles_shift_the_shoulder_bounds():
    """A T-pose's arm is already 90 degrees abducted: 90 more up, 120 down (adduction 30)."""
    for arms, up, down in (("T", 90, 120), ("DOWN", 180, 30)):
        names, rest, parents, role_of = named(skeleton(arms), "MIXAMO")
        _, ranges = anatomy.human_ranges(names, rest, parents)
        name = next(n for n in ranges if role_of[n] == "upper_arm.L")
        limits = ranges[name]
        raising_is_positive = tail_motion(rest[name], limits, "z") @ (UP if arms == "T" else LEFT) > 0
        bounds = (limits["swing_z_max"], -limits["swing_z_min"])
        if not raising_is_positive:
            bounds = bounds[::-1]
        assert [math.degrees(b) for b in bounds] == pytest.approx([up, down], abs=2.5)


def test_a_bent_rest_knee_may_straighten_but_not_hyperextend():
    names, rest, parents, role_of = named(skeleton(knee_bend=math.radians(12)), "METARIG")
    _, ranges = anatomy.human_ranges(names, rest, parents)
    shin = ranges[next(n for n in ranges if role_of[n] == "shin.L")]
    assert math.degrees(-shin["swing_x_min"]) == pytest.approx(12, abs=0.01)
    assert math.degrees(shin["swing_x_max"]) == pytest.approx(135 - 12, abs=0.01)


def test_range_frame_agrees_with_the_solver_swing_twist():
    """A rotation about the range's X axis (armature space) reads back as pure swing_x."""
    names, rest, parents, _ = named(skeleton("A"), "MIXAMO")
    _, ranges = anatomy.human_ranges(names, rest, parents)
    for name, limits in ranges.items():
        m = rest[name][:3, :3]
        x, _, z = anatomy.range_axes(limits["roll"], m)
        for axis, expected in ((x, (0.4, 0.0)), (z, (0.0, 0.4))):
            local = m.T @ rotation(axis, 0.4) @ m  # the pose rotation relative to rest
            b = rotation_y(limits["roll"])
            sx, sz, twist = swing_twist((b.T @ local @ b)[None])
            assert (float(sx[0]), float(sz[0])) == pytest.approx(expected, abs=1e-9)
            assert float(twist[0]) == pytest.approx(0.0, abs=1e-9)


def test_every_range_contains_the_rest_pose_and_roots_get_none():
    for naming in ("MIXAMO", "METARIG", "BIOVISION"):
        names, rest, parents, _ = named(skeleton("T"), naming)
        _, ranges = anatomy.human_ranges(names, rest, parents)
        roots = [n for n, p in parents.items() if p is None]
        assert roots and not any(r in ranges for r in roots)
        for limits in ranges.values():
            assert limits["swing_x_min"] <= 0.0 <= limits["swing_x_max"] <= math.pi
            assert limits["swing_z_min"] <= 0.0 <= limits["swing_z_max"] <= math.pi
            assert limits["twist_min"] <= 0.0 <= limits["twist_max"]
            assert all(math.isfinite(v) for v in limits.values())


def test_the_spine_totals_are_shared_out():
    names, rest, parents, role_of = named(skeleton(), "MIXAMO")
    _, ranges = anatomy.human_ranges(names, rest, parents)
    spine = [ranges[n] for n in ranges if re.fullmatch(r"spine\d?", role_of[n])]
    assert len(spine) == 3
    total = sum(math.degrees(r["swing_x_max"]) for r in spine)
    assert total == pytest.approx(anatomy.THORACOLUMBAR.flexion)
    neck_head = [ranges[n] for n in ranges if role_of[n] in ("neck", "head")]
    assert sum(math.degrees(r["twist_max"]) for r in neck_head) == pytest.approx(anatomy.CERVICAL.internal)


def test_nothing_recognised_gives_no_ranges():
    rest = {"Bone": np.eye(4), "Bone.001": np.eye(4)}
    assert anatomy.human_ranges(list(rest), rest, {"Bone": None, "Bone.001": "Bone"}) == ("", {})
