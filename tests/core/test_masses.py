"""The segment mass model: de Leva's shares on recognised rigs (a whole body adds up to 1),
shared segments split by length, overrides, and the fallback for unrecognised skeletons."""

from __future__ import annotations

import numpy as np
import pytest

from welman_ik.core import segment_masses
from welman_ik.core.masses import DE_LEVA


def metarig() -> tuple[list[str], dict, np.ndarray]:
    """A metarig's bones (a single spine chain of 7: pelvis to head), parents and lengths."""
    spine = ["spine"] + [f"spine.00{i}" for i in range(1, 7)]
    parents = {name: (spine[i - 1] if i else None) for i, name in enumerate(spine)}
    lengths = {name: 0.12 for name in spine}
    for side in "LR":
        chain = [("shoulder", "spine.003", 0.18), ("upper_arm", "shoulder", 0.3), ("forearm", "upper_arm", 0.27),
                 ("hand", "forearm", 0.08), ("thigh", "spine", 0.45), ("shin", "thigh", 0.43), ("foot", "shin", 0.15),
                 ("toe", "foot", 0.07), ("heel.02", "shin", 0.1)]
        for bone, parent, length in chain:
            parents[f"{bone}.{side}"] = None if parent is None else (parent if parent.startswith("spine")
                                                                     else f"{parent}.{side}")
            lengths[f"{bone}.{side}"] = length
        for finger in ("f_index", "f_middle", "thumb"):
            for k in (1, 2, 3):
                name = f"{finger}.0{k}.{side}"
                parents[name] = f"hand.{side}" if k == 1 else f"{finger}.0{k - 1}.{side}"
                lengths[name] = 0.03
    names = list(parents)
    return names, parents, np.array([lengths[n] for n in names])


def mixamo(prefix: str = "mixamorig:") -> tuple[list[str], list, np.ndarray]:
    trunk = [("Hips", None, 0.1), ("Spine", "Hips", 0.1), ("Spine1", "Spine", 0.12), ("Spine2", "Spine1", 0.14),
             ("Neck", "Spine2", 0.1), ("Head", "Neck", 0.18), ("HeadTop_End", "Head", 0.0)]
    bones = list(trunk)
    for side in ("Left", "Right"):
        bones += [(f"{side}Shoulder", "Spine2", 0.12), (f"{side}Arm", f"{side}Shoulder", 0.28),
                  (f"{side}ForeArm", f"{side}Arm", 0.26), (f"{side}Hand", f"{side}ForeArm", 0.09),
                  (f"{side}HandIndex1", f"{side}Hand", 0.04), (f"{side}HandIndex2", f"{side}HandIndex1", 0.03),
                  (f"{side}HandIndex3", f"{side}HandIndex2", 0.02), (f"{side}HandIndex4", f"{side}HandIndex3", 0.02),
                  (f"{side}UpLeg", "Hips", 0.44), (f"{side}Leg", f"{side}UpLeg", 0.42),
                  (f"{side}Foot", f"{side}Leg", 0.15), (f"{side}ToeBase", f"{side}Foot", 0.06),
                  (f"{side}Toe_End", f"{side}ToeBase", 0.04)]
    names = [prefix + b for b, _, _ in bones]
    index = {b: i for i, (b, _, _) in enumerate(bones)}
    parents = [-1 if p is None else index[p] for _, p, _ in bones]
    return names, parents, np.array([length for _, _, length in bones])


def test_de_leva_shares_add_up_to_a_whole_body():
    whole = DE_LEVA["head"][0] + DE_LEVA["trunk"][0] + 2 * sum(
        DE_LEVA[s][0] for s in ("upper_arm", "forearm", "hand", "thigh", "shin", "foot"))
    assert whole == pytest.approx(1.0, abs=1e-9)


def test_a_metarig_gets_de_levas_masses():
    names, parents, lengths = metarig()
    masses, com = segment_masses(names, parents, lengths)
    mass = dict(zip(names, masses))
    centre = dict(zip(names, com))
    assert masses.sum() == pytest.approx(1.0, abs=1e-9)
    for side in "LR":
        assert mass[f"thigh.{side}"] == pytest.approx(0.1416) and centre[f"thigh.{side}"] == pytest.approx(0.4095)
        assert mass[f"shin.{side}"] == pytest.approx(0.0433) and centre[f"shin.{side}"] == pytest.approx(0.4459)
        assert mass[f"upper_arm.{side}"] == pytest.approx(0.0271) and centre[f"upper_arm.{side}"] == pytest.approx(0.5772)
        assert mass[f"forearm.{side}"] == pytest.approx(0.0162) and centre[f"forearm.{side}"] == pytest.approx(0.4574)
        # The foot and toe share the foot's mass by length; hand and fingers the hand's.
        assert mass[f"foot.{side}"] + mass[f"toe.{side}"] == pytest.approx(0.0137)
        assert mass[f"foot.{side}"] / mass[f"toe.{side}"] == pytest.approx(0.15 / 0.07)
        fingers = [n for n in names if n.startswith(("f_", "thumb")) and n.endswith(side)]
        assert mass[f"hand.{side}"] + sum(mass[n] for n in fingers) == pytest.approx(0.0061)
        assert centre[f"hand.{side}"] == pytest.approx(0.79)
        assert mass[f"heel.02.{side}"] == 0.0  # a helper bone: no role, no mass
    # Spine, pelvis and clavicles share the trunk's 43.46 %; neck and head the head's 6.94 %.
    trunk = [n for n in names if n in ("spine", "spine.001", "spine.002", "spine.003") or n.startswith("shoulder")]
    assert sum(mass[n] for n in trunk) == pytest.approx(0.4346)
    assert sum(mass[n] for n in ("spine.004", "spine.005", "spine.006")) == pytest.approx(0.0694)


def test_a_mixamo_rig_gets_de_levas_masses_with_parents_as_indices():
    names, parents, lengths = mixamo()
    masses, _ = segment_masses(names, parents, lengths)
    mass = dict(zip(names, masses))
    assert masses.sum() == pytest.approx(1.0, abs=1e-9)
    assert mass["mixamorig:Hips"] > 0.0  # the pelvis: part of the trunk though no naming gives it a role
    assert mass["mixamorig:LeftUpLeg"] == pytest.approx(0.1416)
    assert mass["mixamorig:HeadTop_End"] == 0.0 and mass["mixamorig:LeftToe_End"] == 0.0
    assert mass["mixamorig:LeftHandIndex4"] == 0.0
    assert mass["mixamorig:Neck"] + mass["mixamorig:Head"] == pytest.approx(0.0694)
    same, _ = segment_masses([n.split(":")[1] for n in names], parents, lengths)  # no prefix
    np.testing.assert_allclose(same, masses)


def test_overrides_replace_the_table_for_their_bones_only():
    names, parents, lengths = metarig()
    names = [*names, "prop"]
    parents = {**parents, "prop": "hand.R"}
    lengths = np.append(lengths, 0.5)
    masses, com = segment_masses(names, parents, lengths)
    assert masses[-1] == 0.0 and com[-1] == 0.5
    overridden, com2 = segment_masses(names, parents, lengths, overrides={"prop": 0.1, "thigh.L": 0.2, "absent": 1.0})
    mass = dict(zip(names, overridden))
    assert mass["prop"] == 0.1 and mass["thigh.L"] == 0.2 and mass["thigh.R"] == pytest.approx(0.1416)
    np.testing.assert_array_equal(com2, com)
    changed = {names.index("prop"), names.index("thigh.L")}
    keep = [i for i in range(len(names)) if i not in changed]
    np.testing.assert_array_equal(overridden[keep], masses[keep])
    with pytest.raises(ValueError):
        segment_masses(names, parents, lengths, overrides={"prop": -1.0})


def test_an_unrecognised_skeleton_weighs_each_bone_by_its_length():
    names = ["Bone", "Bone.001", "Bone.002", "Tentacle"]
    masses, com = segment_masses(names, [None, "Bone", "Bone.001", "Bone"], [1.0, 2.0, 1.0, 0.0])
    np.testing.assert_allclose(masses, [0.25, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(com, 0.5)
    masses, _ = segment_masses(names, [-1, 0, 1, 0], [1.0, 2.0, 1.0, 0.0], overrides={"Tentacle": 0.5})
    np.testing.assert_allclose(masses, [0.25, 0.5, 0.25, 0.5])
    with pytest.raises(ValueError):
        segment_masses(names, None, [1.0, -2.0, 1.0, 0.0])
