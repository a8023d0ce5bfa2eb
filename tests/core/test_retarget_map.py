"""The retarget map without Blender: which source bone each target bone follows, and how, for
real skeletons (the Rigify human metarig, the rig Rigify generates from it, Mixamo, and the
joints of the BVH clips in tests/fixtures), what is reported missing, and the leg scale."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from fixture_skeletons import bvh_joints

from welman_ik.core import anatomy
from welman_ik.core.anatomy.retarget import RetargetPair, leg_length, leg_scale, retarget_map

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# The Rigify human metarig's bones (Blender 4.5, 'Add > Armature > Human (Meta-Rig)') and their
# parents, without the face and the finger bones past the first.
METARIG = {
    "spine": None, "spine.001": "spine", "spine.002": "spine.001", "spine.003": "spine.002",
    "spine.004": "spine.003", "spine.005": "spine.004", "spine.006": "spine.005", "face": "spine.006",
    "shoulder.L": "spine.003", "upper_arm.L": "shoulder.L", "forearm.L": "upper_arm.L", "hand.L": "forearm.L",
    "palm.01.L": "hand.L", "f_index.01.L": "palm.01.L", "thumb.01.L": "palm.01.L", "palm.02.L": "hand.L",
    "f_middle.01.L": "palm.02.L", "palm.03.L": "hand.L", "f_ring.01.L": "palm.03.L", "palm.04.L": "hand.L",
    "f_pinky.01.L": "palm.04.L", "shoulder.R": "spine.003", "upper_arm.R": "shoulder.R", "forearm.R": "upper_arm.R",
    "hand.R": "forearm.R", "palm.01.R": "hand.R", "f_index.01.R": "palm.01.R", "thumb.01.R": "palm.01.R",
    "palm.02.R": "hand.R", "f_middle.01.R": "palm.02.R", "palm.03.R": "hand.R", "f_ring.01.R": "palm.03.R",
    "palm.04.R": "hand.R", "f_pinky.01.R": "palm.04.R", "breast.L": "spine.003", "pelvis.L": "spine",
    "thigh.L": "spine", "shin.L": "thigh.L", "foot.L": "shin.L", "toe.L": "foot.L", "heel.02.L": "foot.L",
    "thigh.R": "spine", "shin.R": "thigh.R", "foot.R": "shin.R", "toe.R": "foot.R",
}

# Bones of the rig Rigify generates from that metarig (Blender 4.5) with their real parents: the
# controls that have a role, every bone above them, and some IK, MCH, ORG and DEF bones beside.
# Its FK spine is split: 'spine_fk.001' hangs from the torso and carries 'spine_fk' (the pelvis,
# pointing down), 'spine_fk.002' hangs from the torso and carries 'spine_fk.003'.
RIGIFY = {
    "root": None, "MCH-torso.parent": None, "torso": "MCH-torso.parent", "hips": "torso", "chest": "torso",
    "MCH-spine.001": "torso", "spine_fk.001": "MCH-spine.001", "MCH-spine": "spine_fk.001", "spine_fk": "MCH-spine",
    "tweak_spine": "spine_fk", "ORG-spine": "tweak_spine", "MCH-thigh_parent.L": "ORG-spine",
    "thigh_fk.L": "MCH-thigh_parent.L", "shin_fk.L": "thigh_fk.L", "MCH-foot_fk.L": "shin_fk.L",
    "foot_fk.L": "MCH-foot_fk.L", "MCH-toe_fk.L": "foot_fk.L", "toe_fk.L": "MCH-toe_fk.L",
    "MCH-thigh_ik_swing.L": "MCH-thigh_parent.L", "thigh_ik.L": "MCH-thigh_ik_swing.L", "DEF-thigh.L": "ORG-spine",
    "DEF-thigh.L.001": "DEF-thigh.L", "DEF-shin.L": "DEF-thigh.L.001", "MCH-thigh_parent.R": "ORG-spine",
    "thigh_fk.R": "MCH-thigh_parent.R", "shin_fk.R": "thigh_fk.R", "MCH-foot_fk.R": "shin_fk.R",
    "foot_fk.R": "MCH-foot_fk.R", "MCH-toe_fk.R": "foot_fk.R", "toe_fk.R": "MCH-toe_fk.R",
    "tweak_spine.001": "spine_fk", "MCH-spine.002": "torso", "spine_fk.002": "MCH-spine.002",
    "MCH-spine.003": "spine_fk.002", "spine_fk.003": "MCH-spine.003", "MCH-ROT-neck": "spine_fk.003",
    "neck": "MCH-ROT-neck", "MCH-ROT-head": "neck", "head": "MCH-ROT-head", "tweak_spine.003": "spine_fk.003",
    "ORG-spine.003": "tweak_spine.003", "ORG-shoulder.L": "ORG-spine.003", "ORG-upper_arm.L": "ORG-shoulder.L",
    "MCH-upper_arm_parent.L": "ORG-shoulder.L", "upper_arm_fk.L": "MCH-upper_arm_parent.L",
    "forearm_fk.L": "upper_arm_fk.L", "MCH-hand_fk.L": "forearm_fk.L", "hand_fk.L": "MCH-hand_fk.L",
    "MCH-upper_arm_ik_swing.L": "MCH-upper_arm_parent.L", "upper_arm_ik.L": "MCH-upper_arm_ik_swing.L",
    "DEF-upper_arm.L": "ORG-shoulder.L", "DEF-upper_arm.L.001": "DEF-upper_arm.L",
    "DEF-forearm.L": "DEF-upper_arm.L.001", "DEF-forearm.L.001": "DEF-forearm.L", "DEF-hand.L": "DEF-forearm.L.001",
    "ORG-palm.01.L": "DEF-hand.L", "MCH-f_index.01_drv.L": "ORG-palm.01.L", "f_index.01.L": "MCH-f_index.01_drv.L",
    "MCH-thumb.01_drv.L": "ORG-palm.01.L", "thumb.01.L": "MCH-thumb.01_drv.L", "ORG-shoulder.R": "ORG-spine.003",
    "MCH-upper_arm_parent.R": "ORG-shoulder.R", "upper_arm_fk.R": "MCH-upper_arm_parent.R",
    "forearm_fk.R": "upper_arm_fk.R", "MCH-hand_fk.R": "forearm_fk.R", "hand_fk.R": "MCH-hand_fk.R",
    "breast.L": "ORG-spine.003", "shoulder.L": "ORG-spine.003", "shoulder.R": "ORG-spine.003",
    "MCH-hand_ik.parent.L": None, "hand_ik.L": "MCH-hand_ik.parent.L", "MCH-foot_ik.parent.L": None,
    "foot_ik.L": "MCH-foot_ik.parent.L",
}

# The same rig generated with the metarig spine's pivot one bone higher (its 'pivot_pos' 3): the
# hips branch is now 'spine_fk.002' -> 'spine_fk.001' -> 'spine_fk', the chest branch 'spine_fk.003'
# alone, so the deepest FK bone is the lowest one and depth no longer orders the spine.
RIGIFY_PIVOT_3 = {**RIGIFY, "MCH-spine.001": "spine_fk.002", "MCH-spine.003": "torso", "MCH-pivot": "spine_fk.003",
                  "tweak_spine.003": "MCH-pivot"}

LIMB_KINDS = {"clavicle": "ORIENTATION", "upper_arm": "ORIENTATION", "forearm": "ORIENTATION", "hand": "POSE",
              "thigh": "ORIENTATION", "shin": "ORIENTATION", "foot": "POSE", "toe": "ORIENTATION"}


def bvh(name: str) -> tuple[list[str], dict]:
    """Joint names and parents of a fixture BVH file's hierarchy."""
    return bvh_joints(FIXTURES / name)


def rig(table: dict) -> tuple[list[str], dict]:
    return list(table), dict(table)


def as_tuples(pairs) -> list[tuple]:
    return [tuple(p) for p in pairs]


FINGER_ROLES = ("finger1", "finger2", "finger3", "thumb1", "thumb2", "thumb3")


def limbs(pairs) -> list[tuple]:
    """The pairs after the trunk (from the first clavicle on), the fingers' left out."""
    first = next(i for i, p in enumerate(pairs) if p.target_bone.startswith(("shoulder", "mixamorig:LeftShoulder")))
    return [p for p in as_tuples(pairs[first:]) if not any(w in p[0] for w in ("Thumb", "Index", "Middle", "Ring", "Pinky"))]


def metarig_limbs(source: dict) -> list[tuple]:
    """The metarig's limb pairs when the source's bones are ``source``[(part, side)]."""
    expected = []
    for parts in (("clavicle", "upper_arm", "forearm", "hand"), ("thigh", "shin", "foot", "toe")):
        for side in ("L", "R"):
            for part in parts:
                if (part, side) in source:
                    bone = "shoulder" if part == "clavicle" else part
                    expected.append((f"{bone}.{side}", source[part, side], LIMB_KINDS[part], 1.0))
    return expected


# ------------------------------------------------------------------------------------------------
# Real skeletons

def test_biovision_clip_onto_the_metarig():
    pairs, missing = retarget_map(*rig(METARIG), *bvh("mocapbank_clip.bvh"))
    source = {}
    for side, word in (("L", "Left"), ("R", "Right")):
        source.update({("clavicle", side): f"{word}Collar", ("upper_arm", side): f"{word}Shoulder",
                       ("forearm", side): f"{word}Elbow", ("hand", side): f"{word}Wrist",
                       ("thigh", side): f"{word}Hip", ("shin", side): f"{word}Knee", ("foot", side): f"{word}Ankle"})
    assert as_tuples(pairs) == [
        ("spine", "Hips", "POSE", 1.0),
        # three target spine bones from two: 0, 0.5 -> 1, 1
        ("spine.001", "Chest", "ORIENTATION", 1.0),
        ("spine.002", "Chest2", "ORIENTATION", 1.0),
        ("spine.003", "Chest2", "ORIENTATION", 1.0),
        ("spine.004", "Neck", "ORIENTATION", 1.0),
        ("spine.005", "Neck", "ORIENTATION", 1.0),
        ("spine.006", "Head", "POSE", 1.0),
        *metarig_limbs(source),
    ]
    assert missing == ["left toe: not found in the source (naming BVH)",
                       "right toe: not found in the source (naming BVH)"]


def test_mixamo_clip_onto_the_generated_rigify_rig():
    pairs, missing = retarget_map(*rig(RIGIFY), *bvh("mixamo_clip.bvh"))
    m = "mixamorig:"
    # The trunk by the controls an animator keys: torso, hips and chest; the FK spine stays.
    assert as_tuples(pairs[:5]) == [
        ("torso", f"{m}Hips", "POSE", 1.0),
        ("hips", f"{m}Hips", "ORIENTATION", 1.0),
        ("chest", f"{m}Spine2", "ORIENTATION", 1.0),
        ("neck", f"{m}Neck", "ORIENTATION", 1.0),
        ("head", f"{m}Head", "POSE", 1.0),
    ]
    expected = []
    for parts in (("shoulder", "upper_arm_fk", "forearm_fk", "hand_fk"), ("thigh_fk", "shin_fk", "foot_fk", "toe_fk")):
        for side, word in (("L", "Left"), ("R", "Right")):
            for part in parts:
                source = {"shoulder": "Shoulder", "upper_arm_fk": "Arm", "forearm_fk": "ForeArm", "hand_fk": "Hand",
                          "thigh_fk": "UpLeg", "shin_fk": "Leg", "foot_fk": "Foot", "toe_fk": "ToeBase"}[part]
                kind = "POSE" if part in ("hand_fk", "foot_fk") else "ORIENTATION"
                expected.append((f"{part}.{side}", f"{m}{word}{source}", kind, 1.0))
    assert as_tuples(pairs[5:5 + len(expected)]) == expected
    # Then the fingers both have, each by the same finger's first segment.
    assert as_tuples(pairs[5 + len(expected):]) == [("thumb.01.L", f"{m}LeftHandThumb1", "ORIENTATION", 1.0),
                                                     ("f_index.01.L", f"{m}LeftHandIndex1", "ORIENTATION", 1.0)]
    assert missing == []
    targets = {p.target_bone for p in pairs}
    assert not any(t.startswith("spine_fk") for t in targets), "the FK spine is an offset, left at rest"
    assert not targets & {"upper_arm_ik.L", "thigh_ik.L", "foot_ik.L", "hand_ik.L"}


def test_walk_clip_without_a_neck_onto_the_generated_rigify_rig():
    pairs, missing = retarget_map(*rig(RIGIFY), *bvh("pymo_walk.bvh"))
    assert as_tuples(pairs[:3]) == [
        ("torso", "Hips", "POSE", 1.0),
        ("hips", "Hips", "ORIENTATION", 1.0),
        ("chest", "Spine", "ORIENTATION", 1.0),
    ]
    assert ("head", "Head", "POSE", 1.0) in as_tuples(pairs)
    assert "neck" not in {p.target_bone for p in pairs}
    assert ("foot_fk.R", "RightFoot", "POSE", 1.0) in as_tuples(pairs)
    assert ("toe_fk.L", "LeftToeBase", "ORIENTATION", 1.0) in as_tuples(pairs)
    assert missing == ["neck: not found in the source (naming Mixamo)"]


def test_mixamo_onto_the_metarig():
    names, parents = bvh("mixamo_clip.bvh")
    pairs, missing = retarget_map(*rig(METARIG), names, parents)
    m = "mixamorig:"
    source = {}
    for side, word in (("L", "Left"), ("R", "Right")):
        source.update({(part, side): f"{m}{word}{stem}" for part, stem in (
            ("clavicle", "Shoulder"), ("upper_arm", "Arm"), ("forearm", "ForeArm"), ("hand", "Hand"),
            ("thigh", "UpLeg"), ("shin", "Leg"), ("foot", "Foot"), ("toe", "ToeBase"))})
    assert as_tuples(pairs) == [
        ("spine", f"{m}Hips", "POSE", 1.0),
        ("spine.001", f"{m}Spine", "ORIENTATION", 1.0),
        ("spine.002", f"{m}Spine1", "ORIENTATION", 1.0),
        ("spine.003", f"{m}Spine2", "ORIENTATION", 1.0),
        ("spine.004", f"{m}Neck", "ORIENTATION", 1.0),
        ("spine.005", f"{m}Neck", "ORIENTATION", 1.0),
        ("spine.006", f"{m}Head", "POSE", 1.0),
        *metarig_limbs(source),
        *[(f"{bone}.{side}", f"{m}{word}Hand{finger}1", "ORIENTATION", 1.0) for side, word in (("L", "Left"), ("R", "Right"))
          for bone, finger in (("thumb.01", "Thumb"), ("f_index.01", "Index"), ("f_middle.01", "Middle"),
                               ("f_ring.01", "Ring"), ("f_pinky.01", "Pinky"))],
    ]
    assert missing == []


def test_metarig_onto_mixamo():
    names, parents = bvh("mixamo_clip.bvh")
    pairs, missing = retarget_map(names, parents, *rig(METARIG))
    m = "mixamorig:"
    assert as_tuples(pairs[:6]) == [
        (f"{m}Hips", "spine", "POSE", 1.0),
        (f"{m}Spine", "spine.001", "ORIENTATION", 1.0),
        (f"{m}Spine1", "spine.002", "ORIENTATION", 1.0),
        (f"{m}Spine2", "spine.003", "ORIENTATION", 1.0),
        (f"{m}Neck", "spine.005", "ORIENTATION", 1.0),  # one neck bone follows the top of two
        (f"{m}Head", "spine.006", "POSE", 1.0),
    ]
    assert limbs(pairs) == [
        (f"{m}LeftShoulder", "shoulder.L", "ORIENTATION", 1.0), (f"{m}LeftArm", "upper_arm.L", "ORIENTATION", 1.0),
        (f"{m}LeftForeArm", "forearm.L", "ORIENTATION", 1.0), (f"{m}LeftHand", "hand.L", "POSE", 1.0),
        (f"{m}RightShoulder", "shoulder.R", "ORIENTATION", 1.0), (f"{m}RightArm", "upper_arm.R", "ORIENTATION", 1.0),
        (f"{m}RightForeArm", "forearm.R", "ORIENTATION", 1.0), (f"{m}RightHand", "hand.R", "POSE", 1.0),
        (f"{m}LeftUpLeg", "thigh.L", "ORIENTATION", 1.0), (f"{m}LeftLeg", "shin.L", "ORIENTATION", 1.0),
        (f"{m}LeftFoot", "foot.L", "POSE", 1.0), (f"{m}LeftToeBase", "toe.L", "ORIENTATION", 1.0),
        (f"{m}RightUpLeg", "thigh.R", "ORIENTATION", 1.0), (f"{m}RightLeg", "shin.R", "ORIENTATION", 1.0),
        (f"{m}RightFoot", "foot.R", "POSE", 1.0), (f"{m}RightToeBase", "toe.R", "ORIENTATION", 1.0),
    ]
    assert missing == []
    assert not any("Eye" in p.target_bone for p in pairs)
    # Each finger the metarig has (its first segments) drives the same finger's.
    fingers = {p.target_bone: p.source_bone for p in pairs if "Hand" in p.target_bone and not p.target_bone.endswith("Hand")}
    assert fingers[f"{m}LeftHandThumb1"] == "thumb.01.L" and fingers[f"{m}RightHandPinky1"] == "f_pinky.01.R"
    assert len(fingers) == 10


def test_metarig_onto_the_generated_rigify_rig_pairs_the_same_body_parts():
    pairs, missing = retarget_map(*rig(RIGIFY), *rig(METARIG))
    assert as_tuples(pairs[:5]) == [
        ("torso", "spine", "POSE", 1.0),
        ("hips", "spine", "ORIENTATION", 1.0),
        ("chest", "spine.003", "ORIENTATION", 1.0),
        ("neck", "spine.005", "ORIENTATION", 1.0),
        ("head", "spine.006", "POSE", 1.0),
    ]
    for p in pairs[5:]:
        assert p.target_bone.replace("_fk", "") == p.source_bone
    assert len(pairs) == 5 + 16 + 2 and missing == []  # (the two fingers the generated rig's table has)


def test_generated_rigify_spine_is_ordered_by_number_not_depth():
    _, parents = rig(RIGIFY_PIVOT_3)
    assert anatomy.depth("spine_fk.001", parents) > anatomy.depth("spine_fk.003", parents)
    pairs, missing = retarget_map(*rig(METARIG), *rig(RIGIFY_PIVOT_3))  # (as a source: its FK spine is read)
    assert as_tuples(pairs[:4]) == [
        ("spine", "torso", "POSE", 1.0),
        ("spine.001", "spine_fk.001", "ORIENTATION", 1.0),
        ("spine.002", "spine_fk.002", "ORIENTATION", 1.0),
        ("spine.003", "spine_fk.003", "ORIENTATION", 1.0),
    ]
    assert missing == []


def test_generated_rigify_as_the_source():
    pairs, missing = retarget_map(*rig(METARIG), *rig(RIGIFY))
    assert as_tuples(pairs[:4]) == [
        ("spine", "torso", "POSE", 1.0),
        ("spine.001", "spine_fk.001", "ORIENTATION", 1.0),
        ("spine.002", "spine_fk.002", "ORIENTATION", 1.0),
        ("spine.003", "spine_fk.003", "ORIENTATION", 1.0),
    ]
    assert ("hand.L", "hand_fk.L", "POSE", 1.0) in as_tuples(pairs)
    assert ("toe.R", "toe_fk.R", "ORIENTATION", 1.0) in as_tuples(pairs)
    assert missing == []


DIRECTIONS = [
    ("metarig", "mocapbank_clip.bvh"), ("metarig", "mixamo_clip.bvh"), ("metarig", "pymo_walk.bvh"),
    ("rigify", "mocapbank_clip.bvh"), ("rigify", "mixamo_clip.bvh"), ("rigify", "pymo_walk.bvh"),
    ("mixamo_clip.bvh", "metarig"), ("mocapbank_clip.bvh", "metarig"), ("pymo_walk.bvh", "rigify"),
    ("rigify", "metarig"), ("metarig", "rigify"), ("rigify_pivot_3", "mixamo_clip.bvh"),
]


def skeleton(which: str) -> tuple[list[str], dict]:
    tables = {"metarig": METARIG, "rigify": RIGIFY, "rigify_pivot_3": RIGIFY_PIVOT_3}
    return rig(tables[which]) if which in tables else bvh(which)


@pytest.mark.parametrize("target, source", DIRECTIONS)
def test_each_target_bone_once_with_its_kind(target, source):
    target_names, target_parents = skeleton(target)
    source_names, source_parents = skeleton(source)
    pairs, _ = retarget_map(target_names, target_parents, source_names, source_parents)
    _, target_roles = anatomy.recognise(target_names, target_parents)
    _, source_roles = anatomy.recognise(source_names, source_parents)
    assert pairs and all(isinstance(p, RetargetPair) for p in pairs)
    assert len({p.target_bone for p in pairs}) == len(pairs)
    assert set(target_names) >= {p.target_bone for p in pairs}
    assert set(source_names) >= {p.source_bone for p in pairs}
    assert pairs[0].kind == "POSE" and all(p.weight == 1.0 for p in pairs)
    for p in pairs[1:]:
        role = target_roles.get(p.target_bone, "")
        base = role.partition(".")[0]
        assert base != "palm", p
        if base in FINGER_ROLES:  # the same finger's same segment
            assert source_roles[p.source_bone] == role and p.kind == "ORIENTATION", p
            finger = next(w for w in ("thumb", "index", "middle", "ring", "pinky") if w in p.target_bone.lower())
            assert finger in p.source_bone.lower(), p
        elif base in LIMB_KINDS:
            assert source_roles[p.source_bone] == role, p  # a limb follows the same limb, same side
            assert p.kind == LIMB_KINDS[base], p
        elif base == "head":
            assert p.kind == "POSE" and source_roles[p.source_bone] == "head", p
        else:
            assert base in ("spine", "neck", "chest", "hips"), p  # (a Rigify rig's hips control)
            assert p.kind == "ORIENTATION", p
    # Deterministic: the same map again.
    assert retarget_map(target_names, target_parents, source_names, source_parents)[0] == pairs


@pytest.mark.parametrize("target, source", DIRECTIONS)
def test_the_order_of_the_names_does_not_matter(target, source):
    target_names, target_parents = skeleton(target)
    source_names, source_parents = skeleton(source)
    forward = retarget_map(target_names, target_parents, source_names, source_parents)
    assert retarget_map(target_names[::-1], target_parents, source_names[::-1], source_parents) == forward


# ------------------------------------------------------------------------------------------------
# Chains of different lengths

def metarig_with(spine: int, neck: int) -> dict:
    """A metarig whose hips carry ``spine`` spine bones (the clavicles on the top one), then
    ``neck`` neck bones and the head."""
    chain = ["spine"] + [f"spine.{i:03d}" for i in range(1, spine + neck + 2)]
    table = {name: (chain[i - 1] if i else None) for i, name in enumerate(chain)}
    top = chain[spine]
    for side in ("L", "R"):
        table.update({f"shoulder.{side}": top, f"upper_arm.{side}": f"shoulder.{side}",
                      f"forearm.{side}": f"upper_arm.{side}", f"hand.{side}": f"forearm.{side}",
                      f"thigh.{side}": "spine", f"shin.{side}": f"thigh.{side}", f"foot.{side}": f"shin.{side}",
                      f"toe.{side}": f"foot.{side}"})
    return table


def chain_pairs(target: dict, source: dict, n: int) -> list[tuple[int, int]]:
    """The spine pairs as (target index, source index) in the chains above the hips."""
    pairs, _ = retarget_map(*rig(target), *rig(source))
    spine = pairs[1:1 + n]
    assert all(p.kind == "ORIENTATION" for p in spine)
    return [(int(p.target_bone.split(".")[1]) - 1, int(p.source_bone.split(".")[1]) - 1) for p in spine]


@pytest.mark.parametrize("n, m, expected", [
    (3, 3, [0, 1, 2]),
    (5, 2, [0, 0, 1, 1, 1]),   # 0, 0.25, 0.5, 0.75, 1: halves round up
    (2, 5, [0, 4]),
    (4, 3, [0, 1, 1, 2]),      # 0, 0.67, 1.33, 2
    (3, 6, [0, 3, 5]),         # 0, 2.5, 5
    (6, 4, [0, 1, 1, 2, 2, 3]),  # 0, 0.6, 1.2, 1.8, 2.4, 3
    (1, 4, [3]),               # one bone follows the top
    (3, 1, [0, 0, 0]),
])
def test_spine_chains_of_different_lengths(n, m, expected):
    got = chain_pairs(metarig_with(n, 2), metarig_with(m, 2), n)
    assert [t for t, _ in got] == list(range(n))
    assert [s for _, s in got] == expected
    if n > 1:
        assert got[0][1] == 0 and got[-1][1] == m - 1
    assert all(a <= b for a, b in itertools.pairwise(expected))


def test_neck_chains_of_different_lengths():
    pairs, missing = retarget_map(*rig(metarig_with(3, 3)), *rig(metarig_with(3, 2)))
    neck = [(p.target_bone, p.source_bone, p.kind) for p in pairs if p.target_bone in ("spine.004", "spine.005",
                                                                                         "spine.006", "spine.007")]
    # three neck bones from two (0, 0.5 -> 1, 1); the head follows the head in pose
    assert neck == [("spine.004", "spine.004", "ORIENTATION"), ("spine.005", "spine.005", "ORIENTATION"),
                    ("spine.006", "spine.005", "ORIENTATION"), ("spine.007", "spine.006", "POSE")]
    assert missing == []


# ------------------------------------------------------------------------------------------------
# What is missing, and unknown namings

def test_a_skeleton_without_arms_reports_them():
    names, parents = bvh("mixamo_clip.bvh")
    arms = ("Shoulder", "Arm", "Hand")
    keep = [n for n in names if not any(a in n for a in arms)]
    assert "mixamorig:LeftForeArm" not in keep and "mixamorig:LeftUpLeg" in keep
    pairs, missing = retarget_map(*rig(METARIG), keep, {n: parents[n] for n in keep})
    assert missing == [
        f"{side} {part}: not found in the source (naming Mixamo)"
        for side in ("left", "right") for part in ("clavicle", "upper arm", "forearm", "hand")
    ]
    assert not any(p.target_bone.startswith(("shoulder", "upper_arm", "forearm", "hand")) for p in pairs)
    assert ("foot.L", "mixamorig:LeftFoot", "POSE", 1.0) in as_tuples(pairs)
    # The other way round the target lacks them.
    _, missing = retarget_map(keep, {n: parents[n] for n in keep}, *rig(METARIG))
    assert missing[0] == "left clavicle: not found in the target (naming Mixamo)"
    assert len(missing) == 8


def test_a_part_on_neither_side_is_reported_once():
    _, missing = retarget_map(*bvh("pymo_walk.bvh"), *bvh("mocapbank_clip.bvh"))
    assert missing == ["neck: not found in the target (naming Mixamo)",
                       "left toe: not found in the source (naming BVH)",
                       "right toe: not found in the source (naming BVH)"]
    _, missing = retarget_map(*bvh("pymo_walk.bvh"), *bvh("pymo_walk.bvh"))
    assert missing == ["neck: not found in the target (naming Mixamo) nor in the source (naming Mixamo)"]


def test_an_unknown_naming_is_refused_naming_the_side():
    props = ["Cube", "Bone", "Bone.001"]
    parents = {"Cube": None, "Bone": "Cube", "Bone.001": "Bone"}
    pairs, missing = retarget_map(*rig(METARIG), props, parents)
    assert pairs == [] and len(missing) == 1 and missing[0].startswith("source: ")
    pairs, missing = retarget_map(props, parents, *rig(METARIG))
    assert pairs == [] and len(missing) == 1 and missing[0].startswith("target: ")
    pairs, missing = retarget_map(props, parents, props, None)
    assert pairs == [] and [m.split(":")[0] for m in missing] == ["target", "source"]


def test_a_naming_found_only_by_best_guess():
    names = ["Pelvis", "Waist", "Chest_Bone", "NeckBone", "HeadBone", "Clavicle_L", "UpperArm_L", "LowerArm_L",
             "Hand_L", "Thigh_L", "Calf_L", "Foot_L", "Toe_L", "UpperArm_R", "Thigh_R", "Calf_R", "Prop_Sword"]
    parents = {"Pelvis": None, "Waist": "Pelvis", "Chest_Bone": "Waist", "NeckBone": "Chest_Bone",
               "HeadBone": "NeckBone", "Clavicle_L": "Chest_Bone", "UpperArm_L": "Clavicle_L",
               "LowerArm_L": "UpperArm_L", "Hand_L": "LowerArm_L", "Thigh_L": "Pelvis", "Calf_L": "Thigh_L",
               "Foot_L": "Calf_L", "Toe_L": "Foot_L", "UpperArm_R": "Chest_Bone", "Thigh_R": "Pelvis",
               "Calf_R": "Thigh_R", "Prop_Sword": "Hand_L"}
    pairs, missing = retarget_map(*rig(METARIG), names, parents)
    assert as_tuples(pairs[:7]) == [
        ("spine", "Pelvis", "POSE", 1.0),
        ("spine.001", "Waist", "ORIENTATION", 1.0),
        ("spine.002", "Chest_Bone", "ORIENTATION", 1.0),  # three from two: 0, 0.5 -> 1, 1
        ("spine.003", "Chest_Bone", "ORIENTATION", 1.0),
        ("spine.004", "NeckBone", "ORIENTATION", 1.0),
        ("spine.005", "NeckBone", "ORIENTATION", 1.0),
        ("spine.006", "HeadBone", "POSE", 1.0),
    ]
    assert ("hand.L", "Hand_L", "POSE", 1.0) in as_tuples(pairs)
    assert ("shin.R", "Calf_R", "ORIENTATION", 1.0) in as_tuples(pairs)
    assert missing == [
        "right clavicle: not found in the source (naming best guess)",
        "right forearm: not found in the source (naming best guess)",
        "right hand: not found in the source (naming best guess)",
        "right foot: not found in the source (naming best guess)",
        "right toe: not found in the source (naming best guess)",
    ]


def test_of_two_bones_named_as_the_hips_the_deeper_is_the_body_root():
    """A best guess names both 'root' (at the floor) and 'pelvis' below it as the hips: the
    pelvis, where the spine and the legs hang, is the body's root."""
    parents = {"root": None, "pelvis": "root", "spine_01": "pelvis", "spine_02": "spine_01", "spine_03": "spine_02",
               "neck_01": "spine_03", "head": "neck_01", "ik_foot_root": "root", "ik_foot_l": "ik_foot_root"}
    for s in ("l", "r"):
        parents.update({f"clavicle_{s}": "spine_03", f"upperarm_{s}": f"clavicle_{s}", f"lowerarm_{s}": f"upperarm_{s}",
                        f"hand_{s}": f"lowerarm_{s}", f"thigh_{s}": "pelvis", f"calf_{s}": f"thigh_{s}",
                        f"foot_{s}": f"calf_{s}", f"ball_{s}": f"foot_{s}"})
    names = list(parents)
    assert anatomy.recognise(names, parents, best_guess=True)[1]["root"] == "pelvis"
    pairs, missing = retarget_map(names, parents, *bvh("mixamo_clip.bvh"))
    assert as_tuples(pairs[:4]) == [
        ("pelvis", "mixamorig:Hips", "POSE", 1.0),
        ("spine_01", "mixamorig:Spine", "ORIENTATION", 1.0),
        ("spine_02", "mixamorig:Spine1", "ORIENTATION", 1.0),
        ("spine_03", "mixamorig:Spine2", "ORIENTATION", 1.0),
    ]
    assert "root" not in {p.target_bone for p in pairs} and missing == []
    assert retarget_map(*rig(METARIG), names, parents)[0][0] == ("spine", "pelvis", "POSE", 1.0)


# ------------------------------------------------------------------------------------------------
# Leg length and scale

def legs(height: float, sides=("L", "R")) -> tuple[dict, dict]:
    """Points and roles of a pair of straight legs, hips at ``height``, ankles at a tenth of it."""
    points, roles = {}, {}
    for side, x in (("L", 0.1), ("R", -0.1)):
        if side not in sides:
            continue
        hip, knee, ankle = (x, 0.0, height), (x, 0.0, 0.55 * height), (x, 0.0, 0.1 * height)
        points.update({f"thigh.{side}": (hip, knee), f"shin.{side}": (knee, ankle),
                       f"foot.{side}": (ankle, (x, -0.1 * height, 0.0))})
        roles.update({f"thigh.{side}": f"thigh.{side}", f"shin.{side}": f"shin.{side}",
                      f"foot.{side}": f"foot.{side}"})
    return points, roles


def test_leg_length_is_hip_to_ankle():
    assert leg_length(*legs(1.0)) == pytest.approx(0.9)
    points, roles = legs(1.0)
    points["foot.R"] = ((-0.1, 0.0, 0.3), (-0.1, -0.1, 0.0))  # right ankle higher: 0.7
    assert leg_length(points, roles) == pytest.approx((0.9 + 0.7) / 2)
    assert leg_length(*legs(2.0, sides=("R",))) == pytest.approx(1.8)


def test_leg_length_is_the_same_with_the_rest_knee_bent():
    """A rest posed mid-stride (the knee bent 60 degrees, the shin swung back) measures the leg
    along its joints, as long as it measures standing straight."""
    points, roles = legs(1.0)
    for side, x in (("L", 0.1), ("R", -0.1)):
        knee = np.array([x, 0.0, 0.55])
        ankle = knee + 0.45 * np.array([0.0, np.sin(np.radians(60.0)), -np.cos(np.radians(60.0))])
        points[f"shin.{side}"] = (tuple(knee), tuple(ankle))
        points[f"foot.{side}"] = (tuple(ankle), (x, 0.0, 0.0))
    assert leg_length(points, roles) == pytest.approx(0.9)


def test_a_target_twice_as_tall_scales_by_two():
    assert leg_scale(*legs(2.0), *legs(1.0)) == pytest.approx(2.0)
    assert leg_scale(*legs(1.0), *legs(4.0)) == pytest.approx(0.25)
    assert leg_scale(*legs(1.8, sides=("L",)), *legs(0.9, sides=("R",))) == pytest.approx(2.0)


def test_leg_scale_on_the_fixture_names():
    """Roles from recognise: Mixamo's UpLeg and Foot, the metarig's thigh and foot."""
    names, parents = bvh("mixamo_clip.bvh")
    _, source_roles = anatomy.recognise(names, parents)
    _, target_roles = anatomy.recognise(*rig(METARIG))
    source_points = {"mixamorig:LeftUpLeg": ((9.0, 0.0, 90.0), (9.0, 0.0, 50.0)),
                     "mixamorig:LeftFoot": ((9.0, 0.0, 10.0), (9.0, -10.0, 0.0))}
    target_points = {"thigh.L": ((0.1, 0.0, 1.0), (0.1, 0.0, 0.6)), "foot.L": ((0.1, 0.0, 0.2), (0.1, -0.1, 0.0)),
                     "thigh.R": ((-0.1, 0.0, 1.0), (-0.1, 0.0, 0.6)), "foot.R": ((-0.1, 0.0, 0.2), (-0.1, -0.1, 0))}
    assert leg_scale(target_points, target_roles, source_points, source_roles) == pytest.approx(0.01)


def test_leg_length_without_a_whole_leg_is_an_error():
    points, roles = legs(1.0)
    with pytest.raises(ValueError, match="thigh and a foot"):
        leg_length({k: v for k, v in points.items() if not k.startswith("foot")}, roles)
    with pytest.raises(ValueError, match="thigh and a foot"):
        leg_length({}, roles)
    # A thigh on one side and a foot on the other is no leg.
    with pytest.raises(ValueError, match="thigh and a foot"):
        leg_length({"thigh.L": points["thigh.L"], "foot.R": points["foot.R"]}, roles)
    with pytest.raises(ValueError, match="thigh and a foot"):
        leg_scale(*legs(1.0), {}, {})


def test_leg_scale_of_a_zero_or_broken_leg_is_an_error():
    flat, roles = legs(1.0)
    for side in ("L", "R"):
        flat[f"shin.{side}"] = (flat[f"thigh.{side}"][0], flat[f"thigh.{side}"][0])  # knee and ankle on the hip
        flat[f"foot.{side}"] = (flat[f"thigh.{side}"][0], (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="finite and positive"):
        leg_scale(*legs(1.0), flat, roles)
    with pytest.raises(ValueError, match="finite and positive"):
        leg_scale(flat, roles, *legs(1.0))
    broken, roles = legs(1.0)
    broken["thigh.L"] = ((float("nan"), 0.0, 1.0), (0.1, 0.0, 0.55))
    with pytest.raises(ValueError, match="finite and positive"):
        leg_scale(broken, roles, *legs(1.0))


def test_exported_from_the_anatomy_package():
    from welman_ik.core.anatomy import retarget

    assert set(retarget.__all__) == {"RetargetPair", "leg_length", "leg_scale", "retarget_map"}
    assert all(getattr(anatomy, name) is getattr(retarget, name) for name in retarget.__all__)
    assert set(retarget.__all__) <= set(anatomy.__all__)
    assert RetargetPair._fields == ("target_bone", "source_bone", "kind", "weight")


def test_a_source_without_hands_gives_the_target_hands_its_forearms():
    """No hand bones in the source: each target hand follows the source's forearm in pose (held
    at its end by the Blender layer), and no hand is reported missing."""
    names, parents = bvh("pymo_walk.bvh")
    handless = [n for n in names if "Hand" not in n]
    pairs, missing = retarget_map(*rig(METARIG), handless, {n: parents[n] for n in handless})
    assert ("hand.L", "LeftForeArm", "POSE", 1.0) in as_tuples(pairs)
    assert ("hand.R", "RightForeArm", "POSE", 1.0) in as_tuples(pairs)
    assert ("forearm.L", "LeftForeArm", "ORIENTATION", 1.0) in as_tuples(pairs)
    assert not any("hand" in line for line in missing)
