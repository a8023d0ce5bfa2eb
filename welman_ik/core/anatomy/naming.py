"""The naming of common skeletons: which naming a rig follows (Rigify, its metarig, Mixamo,
Biovision/CMU BVH, DAZ, or a best guess from name fragments) and each bone's role in the body
('spine', 'upper_arm.L', 'foot.R', ...). Pure Python; never imports bpy."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

NAMINGS = ("RIGIFY", "METARIG", "MIXAMO", "BVH")
NAMING_LABELS = {"RIGIFY": "Rigify", "METARIG": "metarig", "MIXAMO": "Mixamo", "BVH": "BVH", "GUESS": "best guess"}

_TRUNK = {"spine", "neck", "head", "hips", "chest"}
_SIDED = {"clavicle", "upper_arm", "forearm", "hand", "palm", "thigh", "shin", "foot", "toe",
          "finger1", "finger2", "finger3", "thumb1", "thumb2", "thumb3"}


def split_side(name: str) -> tuple[str, str]:
    """('upper_arm', 'L') from 'upper_arm.L', ('Arm', 'L') from 'LeftArm', ('Thumb', 'L') from
    'LThumb', ('Shldr', 'L') from 'lShldr'; side '' when the name has none."""
    match = re.fullmatch(r"(.+?)[._\- ]([LRlr])((?:\.\d+)?)", name)
    if match:
        return match.group(1) + match.group(3), match.group(2).upper()
    match = re.fullmatch(r"(Left|Right|left|right|LEFT|RIGHT)[_ ]?(.+)", name)
    if match:
        return match.group(2), match.group(1)[0].upper()
    match = re.fullmatch(r"([LRlr])([A-Z].*)", name)
    if match:
        return match.group(2), match.group(1).upper()
    return name, ""


def _strip_prefix(name: str) -> tuple[str, str]:
    """('mixamorig', 'Hips') from 'mixamorig:Hips'."""
    prefix, _, rest = name.rpartition(":")
    return prefix, rest


_RIGIFY_CONTROLS = {
    "upper_arm_fk": "upper_arm", "forearm_fk": "forearm", "hand_fk": "hand", "thigh_fk": "thigh",
    "shin_fk": "shin", "foot_fk": "foot", "toe_fk": "toe", "shoulder": "clavicle",
}
_METARIG_BONES = {
    "upper_arm": "upper_arm", "forearm": "forearm", "hand": "hand", "thigh": "thigh", "shin": "shin",
    "foot": "foot", "toe": "toe", "shoulder": "clavicle",
}
# Mixamo and CMU (whose BVH files use the same names for most joints); 'Shoulder' is the clavicle.
_MIXAMO = {
    "Shoulder": "clavicle", "Arm": "upper_arm", "ForeArm": "forearm", "Hand": "hand", "UpLeg": "thigh",
    "Leg": "shin", "Foot": "foot", "ToeBase": "toe", "Thumb": "thumb1", "FingerBase": "palm",
}
_MIXAMO_TRUNK = {"Spine": "spine", "Spine1": "spine", "Spine2": "spine", "Spine3": "spine",
                 "LowerBack": "spine", "Neck": "neck", "Neck1": "neck", "Neck2": "neck", "Head": "head"}
# Biovision (and its 3ds Max flavour): 'Shoulder' is the upper arm.
_BIOVISION = {
    "Collar": "clavicle", "Shoulder": "upper_arm", "UpArm": "upper_arm", "Elbow": "forearm", "LowArm": "forearm",
    "ForeArm": "forearm", "Wrist": "hand", "Hand": "hand", "Hip": "thigh", "UpLeg": "thigh", "Thigh": "thigh",
    "Knee": "shin", "LowLeg": "shin", "Leg": "shin", "Ankle": "foot", "Foot": "foot", "Toe": "toe", "ToeBase": "toe",
}
_BIOVISION_TRUNK = {"Chest": "spine", "Chest2": "spine", "Chest3": "spine", "Chest4": "spine", "Spine": "spine",
                    "Spine1": "spine", "Abdomen": "spine", "Neck": "neck", "Neck1": "neck", "Head": "head"}
# DAZ / Poser BVH.
_DAZ = {"Collar": "clavicle", "Shldr": "upper_arm", "ShldrBend": "upper_arm", "ForeArm": "forearm",
        "ForearmBend": "forearm", "Hand": "hand", "Thigh": "thigh", "ThighBend": "thigh", "Shin": "shin",
        "Foot": "foot", "Toe": "toe"}
_DAZ_TRUNK = {"abdomen": "spine", "abdomen2": "spine", "abdomenLower": "spine", "abdomenUpper": "spine",
              "chest": "spine", "chestLower": "spine", "chestUpper": "spine", "neck": "neck", "neckLower": "neck",
              "neckUpper": "neck", "head": "head"}

_MIXAMO_SIGNATURE = {"Hips", "Spine", "LeftArm", "LeftForeArm", "LeftUpLeg", "LeftLeg", "RightArm", "RightUpLeg"}
_CMU_ONLY = {"LowerBack", "LHipJoint", "RHipJoint", "Neck1", "LThumb", "RThumb", "LeftFingerBase", "RightFingerBase"}
_BIOVISION_SIGNATURE = {"LeftCollar", "LeftElbow", "LeftWrist", "LeftHip", "LeftKnee", "LeftAnkle", "LeftUpArm",
                        "LeftLowArm", "LeftLowLeg", "Chest"}
_DAZ_SIGNATURE = {"hip", "abdomen", "chest", "lShldr", "lForeArm", "lThigh", "lShin", "lCollar"}
_METARIG_SIGNATURE = {"spine", "upper_arm.L", "upper_arm.R", "forearm.L", "thigh.L", "thigh.R", "shin.L"}
_RIGIFY_SIGNATURE = {"torso", "upper_arm_fk.L", "forearm_fk.L", "thigh_fk.L", "shin_fk.L", "hand_fk.L", "foot_fk.L"}

_DIGIT = re.compile(r"^(?:Hand)?(Thumb|Index|Middle|Ring|Pinky)([1-4])$")


def _with_side(role: str, side: str) -> str:
    return f"{role}.{side}" if role in _SIDED else role


def _naming_of(names: Sequence[str]) -> str:
    present = set(names)
    stripped = [_strip_prefix(n) for n in names]
    plain = {rest for _, rest in stripped}
    if any(n.startswith(("ORG-", "DEF-")) for n in names) and len(present & _RIGIFY_SIGNATURE) >= 3:
        return "RIGIFY"
    if len(present & _METARIG_SIGNATURE) >= 3:
        return "METARIG"
    mixamo = len(plain & _MIXAMO_SIGNATURE)
    if mixamo >= 4 and any(p.lower().startswith("mixamo") for p, _ in stripped):
        return "MIXAMO"
    if mixamo >= 4 and not plain & (_CMU_ONLY | _BIOVISION_SIGNATURE):
        return "MIXAMO"
    if mixamo >= 4 or len(plain & _BIOVISION_SIGNATURE) >= 3 or len(plain & _DAZ_SIGNATURE) >= 3:
        return "BVH"
    return ""


def _role_rigify(name: str, metarig: bool) -> str:
    stem, side = split_side(name)
    if side:
        finger = re.fullmatch(r"f_(?:index|middle|ring|pinky)\.0([123])", stem)
        if finger:
            return _with_side(f"finger{finger.group(1)}", side)
        thumb = re.fullmatch(r"thumb\.0([123])", stem)
        if thumb:
            return _with_side(f"thumb{thumb.group(1)}", side)
        if metarig and re.fullmatch(r"palm\.0[1-4]", stem):
            return _with_side("palm", side)
        role = (_METARIG_BONES if metarig else _RIGIFY_CONTROLS).get(stem, "")
        return _with_side(role, side) if role else ""
    if metarig:
        return "spine" if re.fullmatch(r"spine(\.\d{3})?", name) else ""
    if re.fullmatch(r"spine_fk(\.\d{3})?", name):
        return "spine"
    return {"neck": "neck", "head": "head", "hips": "hips", "chest": "chest", "torso": "torso"}.get(name, "")


def _role_mocap(name: str, flavour: str) -> str:
    _, plain = _strip_prefix(name)
    stem, side = split_side(plain)
    if not side:
        trunk = {"mixamo": _MIXAMO_TRUNK, "biovision": _BIOVISION_TRUNK, "daz": _DAZ_TRUNK}[flavour]
        return trunk.get(plain, "")
    digit = _DIGIT.match(stem)
    if digit and flavour == "mixamo":
        kind, number = digit.groups()
        if number == "4":
            return ""  # an end bone
        return _with_side(f"{'thumb' if kind == 'Thumb' else 'finger'}{number}", side)
    table = {"mixamo": _MIXAMO, "biovision": _BIOVISION, "daz": _DAZ}[flavour]
    role = table.get(stem, "")
    return _with_side(role, side) if role else ""


def _flavour(names: Sequence[str]) -> str:
    plain = {_strip_prefix(n)[1] for n in names}
    if len(plain & _DAZ_SIGNATURE) >= 3:
        return "daz"
    # 'LeftShoulder' is the clavicle beside 'LeftArm' (Mixamo, CMU) and the upper arm beside
    # 'LeftCollar' / 'LeftElbow' (Biovision).
    if len(plain & _BIOVISION_SIGNATURE) >= 3 and not {"LeftArm", "RightArm"} & plain:
        return "biovision"
    return "mixamo"


_SKIP = re.compile(r"(^|[^a-z])(mch|org|def|vis|wgt|ik|pole|target|tweak|end|eye|jaw|twist|roll|ctrl|"
                   r"helper|nub|tip|ear|tail|breast|teeth|tongue|lip|brow|lid|cheek|nose|chin|hair)([^a-z]|$)")


def _role_guess(name: str, side: str, has_upper_arm: set) -> str:
    """A role from name fragments ('HUMAN' preset, best guess)."""
    low = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    if _SKIP.search(low) or low.endswith("_end"):
        return ""
    flat = low.replace("_", "").replace(".", "").replace(" ", "").replace("-", "")
    if side:
        number = re.search(r"(\d)\D*$", flat)
        n = min(max(int(number.group(1)), 1), 3) if number else 1
        ordered = [
            (("thumb",), f"thumb{n}"), (("index", "middle", "ring", "pinky", "little", "finger"), f"finger{n}"),
            (("forearm", "lowerarm", "lowarm", "elbow", "ulna", "radius"), "forearm"),
            (("upperarm", "uparm", "shldr", "humerus"), "upper_arm"),
            (("clavicle", "collar", "scapula"), "clavicle"),
            (("shoulder",), "clavicle" if side in has_upper_arm else "upper_arm"),
            (("arm",), "upper_arm"), (("hand", "wrist"), "hand"), (("palm", "metacarpal"), "palm"),
            (("thigh", "upleg", "upperleg", "femur", "hip"), "thigh"),
            (("shin", "calf", "knee", "lowleg", "lowerleg", "tibia", "crus"), "shin"),
            (("toe", "ball"), "toe"), (("foot", "ankle", "heel"), "foot"), (("leg",), "shin"),
        ]
        for fragments, role in ordered:
            if any(f in flat for f in fragments):
                return _with_side(role, side)
        return ""
    for fragments, role in ((("neck",), "neck"), (("head", "skull"), "head"),
                            (("hips", "pelvis", "hip", "root", "torso"), "pelvis"),
                            (("spine", "chest", "abdomen", "back", "waist", "lumbar", "thorax", "torso"), "spine")):
        if any(f in flat for f in fragments):
            return role
    return ""


def recognise(names: Sequence[str], parents: Mapping[str, str | None] | None = None,
              best_guess: bool = False) -> tuple[str, dict[str, str]]:
    """The naming of a skeleton ('RIGIFY', 'METARIG', 'MIXAMO', 'BVH'; 'GUESS' when
    ``best_guess`` matched name fragments instead; '' none) and each bone's role ('spine',
    'neck', 'head', 'hips', 'chest', 'torso', 'pelvis', 'clavicle.L', 'upper_arm.L',
    'forearm.L', 'hand.L', 'palm.L', 'thigh.L', 'shin.L', 'foot.L', 'toe.L', 'finger1.L'..
    'finger3.L', 'thumb1.L'..'thumb3.L'; .R likewise). Bones without a role are left out.
    ``parents`` (each bone's parent name or None) orders a metarig's single spine chain into
    spine, neck and head; without it the names' order does."""
    naming = _naming_of(names)
    roles: dict[str, str] = {}
    if naming in ("RIGIFY", "METARIG"):
        for name in names:
            role = _role_rigify(name, naming == "METARIG")
            if role:
                roles[name] = role
    elif naming:
        flavour = _flavour(names)
        for name in names:
            role = _role_mocap(name, flavour)
            if role:
                roles[name] = role
    elif best_guess:
        naming = "GUESS"
        sides = [(name, *split_side(_strip_prefix(name)[1])) for name in names]
        has_upper_arm = {s for _, stem, s in sides if s and re.search(r"arm|humerus|shldr", stem, re.IGNORECASE)
                         and not re.search(r"fore|low", stem, re.IGNORECASE)}
        for name, stem, side in sides:
            role = _role_guess(stem, side, has_upper_arm)
            if role:
                roles[name] = role
    if naming in ("METARIG", "GUESS"):
        _split_neck(roles, parents or {})
    return (naming if roles or naming != "GUESS" else ""), roles


def depth(name: str, parents: Mapping[str, str | None]) -> int:
    """How many parents above ``name`` (``parents``: each bone's parent name or None)."""
    count, parent = 0, parents.get(name)
    while parent is not None and count < 1000:
        count, parent = count + 1, parents.get(parent)
    return count


def _split_neck(roles: dict, parents: Mapping[str, str | None]) -> None:
    """In a single spine chain (a metarig's spine, spine.001, ...), the bones above where the
    clavicles (or upper arms) hang are the neck and the topmost the head."""
    spine = sorted((n for n, r in roles.items() if r == "spine"), key=lambda n: (depth(n, parents), n))
    if len(spine) < 3 or any(r in ("neck", "head") for r in roles.values()):
        return
    attach = [parents.get(n) for n, r in roles.items() if r.startswith(("clavicle", "upper_arm"))]
    top = max((spine.index(a) for a in attach if a in spine), default=len(spine) - 3)
    above = spine[top + 1:]
    if above:
        roles[above[-1]] = "head"
        for n in above[:-1]:
            roles[n] = "neck"
