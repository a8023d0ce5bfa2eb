"""Human joint ranges: range-of-motion tables and their mapping onto a rig's own bone axes,
the bones' roles given by ``naming.recognise``. Pure numpy; never imports bpy.

A range (``pose_bone.welman_ik_range``) is measured on R, the bone's pose rotation relative
to its rest orientation, in the range frame R' = B^T R B, B the rotation by ``roll`` about
the bone's Y. R' = S T: T twists about Y, S swings Y about an axis perpendicular to it, swing
vector (sx, 0, sz). Allowed: twist in [twist_min, twist_max] and (sx/ax)^2 + (sz/az)^2 <= 1
with ax = swing_x_max (sx >= 0) or -swing_x_min, az likewise. Rotation about +X carries +Y
toward +Z, so a positive swing_x carries the tail toward the range's +Z, and a positive
swing_z carries it toward the range's -X.

Here every range frame is chosen from the rest pose's geometry, never from a fixed bone axis
(bone rolls differ between rigs): the range's X axis is the joint's anatomical flexion axis,
so a positive swing_x is flexion, and the other anatomical pairs (abduction/adduction,
internal/external rotation) go to swing_z and twist with the signs that the bone's side and
orientation give.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass

import numpy as np

from .naming import _TRUNK, recognise


@dataclass(frozen=True)
class Rom:
    """A joint's range of motion from the anatomical position [degrees]: swing toward flexion
    and extension, toward abduction and adduction, and twist (internal and external rotation)."""

    flexion: float
    extension: float
    abduction: float
    adduction: float
    internal: float
    external: float


# Range-of-motion tables.
#
# AAOS: American Academy of Orthopaedic Surgeons, "Joint Motion: Method of Measuring and
#   Recording" (1965), the values as tabulated by Greene & Heckman, "The Clinical Measurement
#   of Joint Motion" (AAOS, 1994).
# Soucie: Soucie et al., "Range of motion measurements: reference values and a database for
#   comparison studies", Haemophilia 17 (2011) 500-507: healthy adults' elbow and knee extend
#   only a few degrees past straight, so the hinges here get none.
# Kapandji: "The Physiology of the Joints", vol. 2 (lower limb) and vol. 3 (spine and head):
#   how the spinal totals share out between regions and segments.
# Neumann: "Kinesiology of the Musculoskeletal System" (2nd ed., 2010), for the
#   sternoclavicular joint, which AAOS does not tabulate.
# "Slack" values are a few degrees that a joint's soft tissue gives in a direction it does not
# really move in; they keep an IK solver from locking dead on a hinge.

ROM = {
    # Clavicle (sternoclavicular; Neumann): flexion = protraction (the tail forward) 15 /
    # retraction 15, abduction = elevation 45 / depression 10, axial rotation 20 each way.
    "clavicle": Rom(15, 15, 45, 10, 20, 20),
    # Shoulder (glenohumeral with the shoulder girdle; AAOS): flexion 180, extension 60,
    # abduction 180, adduction 30 (AAOS 0 in the frontal plane: the trunk is in the way; 30 lets
    # the arm cross in front of it), internal rotation 70, external rotation 90.
    "upper_arm": Rom(180, 60, 180, 30, 70, 90),
    # Elbow (AAOS): flexion 150, hyperextension 0 (Soucie), 3 slack sideways. Its twist is the
    # forearm's pronation 80 / supination 80 (AAOS): rigs turn the hand by twisting the forearm.
    "forearm": Rom(150, 0, 3, 3, 80, 80),
    # Wrist (AAOS): flexion 80 (toward the palm), extension 70, abduction = radial deviation
    # 20, adduction = ulnar deviation 30; twist 10 slack (pronation is the forearm's).
    "hand": Rom(80, 70, 20, 30, 10, 10),
    # Metacarpals (Rigify's palm bones): little motion, some cupping.
    "palm": Rom(10, 5, 3, 3, 3, 3),
    # Fingers (AAOS): MCP flexion 90, hyperextension 45, spread 20 each way; PIP flexion 100;
    # DIP flexion 90, hyperextension 10.
    "finger1": Rom(90, 45, 20, 20, 5, 5),
    "finger2": Rom(100, 0, 3, 3, 3, 3),
    "finger3": Rom(90, 10, 3, 3, 3, 3),
    # Thumb (AAOS): CMC flexion 15 (across the palm), extension 20, palmar abduction 70,
    # opposition twist 15 (slack-sized); MCP flexion 50; IP flexion 80, hyperextension 20.
    "thumb1": Rom(15, 20, 70, 5, 15, 15),
    "thumb2": Rom(50, 0, 5, 5, 5, 5),
    "thumb3": Rom(80, 20, 3, 3, 3, 3),
    # Hip (AAOS): flexion 120, extension 30, abduction 45, adduction 30, internal rotation 45,
    # external rotation 45.
    "thigh": Rom(120, 30, 45, 30, 45, 45),
    # Knee (AAOS): flexion 135, hyperextension 0 (Soucie), 3 slack sideways, 5 of tibial twist.
    "shin": Rom(135, 0, 3, 3, 5, 5),
    # Ankle: flexion = plantar flexion 50 (AAOS; the toes down), extension = dorsiflexion 40:
    # AAOS's 20 is measured without load, but a squat with the heels down loads the ankle,
    # where the weight-bearing lunge test finds about 40 in healthy adults (Bennell et al.,
    # Aust. J. Physiother. 44 (1998) 175-180). The foot's turn about the leg's long axis
    # (Kapandji vol. 2: 35-45 in all) as 10 out (abduction) and 20 in (adduction); subtalar
    # inversion 35 / eversion 15 (AAOS) as the foot's twist (internal = inversion).
    "foot": Rom(50, 40, 10, 20, 35, 15),
    # Toes (AAOS, great toe MTP): flexion 45, extension 70; 10 spread, 5 twist slack.
    "toe": Rom(45, 70, 10, 10, 5, 5),
}

# Spinal totals (AAOS): flexion, extension, lateral bending (each side), axial rotation (each side).
CERVICAL = Rom(45, 45, 45, 45, 60, 60)
THORACOLUMBAR = Rom(80, 25, 35, 35, 45, 45)
# How the totals share out (after Kapandji vol. 3 and White & Panjabi's "Clinical
# Biomechanics of the Spine"): the upper cervical joints (C0-C2, the rig's head bone) carry
# about half the neck's axial rotation and a third of its extension, little else; the lumbar
# spine most of the flexion-extension and almost none of the axial rotation.
HEAD_SHARE = Rom(0.2, 0.35, 0.1, 0.1, 0.5, 0.5)
LUMBAR_SHARE = Rom(0.6, 0.6, 0.5, 0.5, 0.1, 0.1)
LUMBAR_FRACTION = 0.4  # the lower 40 % of a rig's trunk segments are lumbar


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else np.zeros(3)


def _perpendicular(v, r, fallback=None) -> np.ndarray:
    """``v`` made perpendicular to unit ``r`` and unit (``fallback`` when ``v`` is nearly along ``r``)."""
    p = np.asarray(v, dtype=float) - np.dot(v, r) * r
    if np.linalg.norm(p) < 0.2 * max(np.linalg.norm(v), 1e-12) and fallback is not None:
        return _perpendicular(fallback, r)
    return _unit(p)


def transport(a, b, fallback_axis) -> np.ndarray:
    """The smallest rotation (3x3) carrying unit ``a`` onto unit ``b`` (a half turn about
    ``fallback_axis`` made perpendicular to ``a`` when they are opposite)."""
    v = np.cross(a, b)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-9:
        axis = _perpendicular(fallback_axis, a, np.array([1.0, 0.0, 0.0]))
        return 2.0 * np.outer(axis, axis) - np.eye(3)
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + k + k @ k / (1.0 + c)


@dataclass(frozen=True)
class Body:
    """The character's directions in armature space (unit): up, forward, and its own left."""

    up: np.ndarray
    forward: np.ndarray
    left: np.ndarray


def body_frame(roles: Mapping[str, str], rest: Mapping[str, np.ndarray]) -> Body:
    """Up from the hips (the thighs' heads) to the head; forward from the feet (or from the
    left-right pairs); armature +Z and -Y (Blender's convention) where the rig says nothing."""
    heads = {n: np.asarray(rest[n], dtype=float)[:3, 3] for n in roles}
    ys = {n: np.asarray(rest[n], dtype=float)[:3, 1] for n in roles}

    def bones(*wanted):
        return [n for n, r in roles.items() if r in wanted]

    thighs = bones("thigh.L", "thigh.R")
    top = bones("head") or bones("neck") or bones("spine")
    up = np.array([0.0, 0.0, 1.0])
    if thighs and top:
        pelvis = np.mean([heads[n] for n in thighs], axis=0)
        highest = max(top, key=lambda n: float(np.dot(heads[n] - pelvis, up)))
        candidate = _unit(heads[highest] - pelvis)
        if np.linalg.norm(candidate) > 0.5:
            up = candidate
    elif thighs:
        up = _unit(-np.mean([ys[n] for n in thighs], axis=0)) if np.linalg.norm(
            np.mean([ys[n] for n in thighs], axis=0)) > 1e-6 else up
    left_pairs = []
    for base in ("thigh", "upper_arm", "shin", "forearm", "foot", "clavicle", "hand"):
        ls, rs = bones(f"{base}.L"), bones(f"{base}.R")
        if ls and rs:
            left_pairs.append(np.mean([heads[n] for n in ls], axis=0) - np.mean([heads[n] for n in rs], axis=0))
    left = _perpendicular(np.mean(left_pairs, axis=0), up) if left_pairs else np.zeros(3)
    feet = bones("foot.L", "foot.R")
    forward = np.zeros(3)
    if feet:
        forward = _perpendicular(np.mean([ys[n] for n in feet], axis=0), up)
    if np.linalg.norm(forward) < 0.5:
        forward = _unit(np.cross(left, up)) if np.linalg.norm(left) > 0.5 else _perpendicular([0.0, -1.0, 0.0], up)
    return Body(up=up, forward=forward, left=_unit(np.cross(up, forward)))


# ---------------------------------------------------------------------------------------------
# Ranges

def _signed_angle(a, b, axis) -> float:
    """The component about unit ``axis`` of the rotation vector carrying unit ``a`` to unit ``b`` [rad]."""
    cross = np.cross(a, b)
    s = float(np.linalg.norm(cross))
    if s < 1e-9:
        return 0.0
    return math.atan2(s, float(np.dot(a, b))) * float(np.dot(cross / s, axis))


def roll_for(x_axis, rest3) -> float:
    """The ``roll`` [rad] that turns the range's X axis onto ``x_axis`` (armature space, made
    perpendicular to the bone's Y) for a bone whose rest rotation (armature space) is ``rest3``:
    the range's X is cos(roll) X_bone - sin(roll) Z_bone."""
    return math.atan2(-float(np.dot(x_axis, rest3[:, 2])), float(np.dot(x_axis, rest3[:, 0])))


def range_axes(roll: float, rest3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The range's X, Y, Z axes in armature space for ``roll`` and the bone's rest rotation."""
    c, s = math.cos(roll), math.sin(roll)
    x = c * rest3[:, 0] - s * rest3[:, 2]
    z = s * rest3[:, 0] + c * rest3[:, 2]
    return x, rest3[:, 1].copy(), z


def _bounds(rom: Rom, f0: float, a0: float, x, r, dx, dz) -> dict:
    """The range dict for a joint whose flexion axis is ``x`` (armature space), tail ``r``,
    flexion direction ``dx`` and abduction direction ``dz`` (unit, perpendicular to ``r``),
    with the rest ``f0`` [rad] flexed and ``a0`` abducted from the anatomical position."""
    rad = math.radians
    flex_max = min(max(rad(rom.flexion) - f0, 0.0), math.pi)
    ext_max = min(max(rad(rom.extension) + f0, 0.0), math.pi)
    abd_max = min(max(rad(rom.abduction) - a0, 0.0), math.pi)
    add_max = min(max(rad(rom.adduction) + a0, 0.0), math.pi)
    # A positive swing_z carries the tail toward the range's -X = dx x r.
    z_is_abduction = float(np.dot(dz, np.cross(dx, r))) >= 0.0
    # A positive twist carries dx toward r x dx = x; internal rotation carries it toward -dz.
    twist_is_internal = float(np.dot(x, -dz)) >= 0.0
    return {
        "swing_x_min": -ext_max,
        "swing_x_max": flex_max,
        "swing_z_min": -(add_max if z_is_abduction else abd_max),
        "swing_z_max": abd_max if z_is_abduction else add_max,
        "twist_min": -(rad(rom.external) if twist_is_internal else rad(rom.internal)),
        "twist_max": rad(rom.internal) if twist_is_internal else rad(rom.external),
    }


def _trunk_rom(kind: str, index: int, count: int, lumbar_count: int) -> Rom:
    """The share of the spinal totals for one segment: ``kind`` 'spine' (segment ``index`` of
    ``count`` from the bottom, the lowest ``lumbar_count`` lumbar), 'neck' (one of ``count``),
    'head', 'hips' (the lumbar spine), 'chest' (the thoracic spine)."""
    def share(total: Rom, weights: Rom, divide: int = 1) -> Rom:
        return Rom(*(t * w / divide for t, w in zip(astuple(total), astuple(weights), strict=True)))

    def rest_of(weights: Rom) -> Rom:
        return Rom(*(1.0 - w for w in astuple(weights)))

    lumbar_share, thoracic_share = LUMBAR_SHARE, rest_of(LUMBAR_SHARE)
    if kind == "head":
        return share(CERVICAL, HEAD_SHARE)
    if kind == "neck":
        return share(CERVICAL, rest_of(HEAD_SHARE), max(count, 1))
    if kind == "hips":
        return share(THORACOLUMBAR, lumbar_share)
    if kind == "chest":
        return share(THORACOLUMBAR, thoracic_share)
    thoracic_count = count - lumbar_count
    if lumbar_count == 0 or thoracic_count == 0:
        return share(THORACOLUMBAR, Rom(1, 1, 1, 1, 1, 1), max(count, 1))
    if index < lumbar_count:
        return share(THORACOLUMBAR, lumbar_share, lumbar_count)
    return share(THORACOLUMBAR, thoracic_share, thoracic_count)


@dataclass
class _Rig:
    roles: dict
    rest: dict  # name -> 3x3 rest rotation (armature space)
    heads: dict
    parents: dict
    body: Body

    def ancestor(self, name: str, wanted) -> str | None:
        parent = self.parents.get(name)
        seen = 0
        while parent is not None and seen < 1000:
            if self.roles.get(parent) in wanted:
                return parent
            parent = self.parents.get(parent)
            seen += 1
        return None

    def y(self, name: str) -> np.ndarray:
        return self.rest[name][:, 1]

    def lateral(self, side: str) -> np.ndarray:
        return self.body.left if side == "L" else -self.body.left


def _hand_directions(rig: _Rig, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hand Y, palm normal, radial direction) of one side: the thumb lies on the radial side;
    without a thumb, a best guess (thumb forward, as in a T-pose, an A-pose and arms hanging)."""
    hands = [n for n, r in rig.roles.items() if r == f"hand.{side}"]
    thumbs = [n for n, r in rig.roles.items() if r.startswith("thumb") and r.endswith(f".{side}")]
    body = rig.body
    r = rig.y(hands[0]) if hands else -body.up
    radial = np.zeros(3)
    if hands and thumbs:
        radial = _perpendicular(np.mean([rig.heads[t] for t in thumbs], axis=0) - rig.heads[hands[0]], r)
    if np.linalg.norm(radial) < 0.5:
        radial = _perpendicular(body.forward, r, body.up)
    sign = 1.0 if side == "L" else -1.0
    palm = _unit(sign * np.cross(r, radial))
    return r, palm, radial


def _bone_range(rig: _Rig, name: str, chains: dict) -> dict | None:
    role = rig.roles[name]
    base, _, side = role.partition(".")
    body = rig.body
    m = rig.rest[name]
    r = m[:, 1]
    f0 = a0 = 0.0
    if base in _TRUNK:
        # Rest is the neutral trunk; the axes come from the upright trunk carried onto the bone.
        turn = transport(body.up, r, body.left)
        dx, dz = turn @ body.forward, turn @ body.left
        kind, index, count, lumbar = chains.get(name, (base, 0, 1, 0))
        rom = _trunk_rom(kind, index, count, lumbar)
        if kind == "hips" or (kind == "spine" and name in chains.get("_reversed", ())):
            # A control that turns the body below it: lumbar flexion turns it backward.
            rom = Rom(rom.extension, rom.flexion, rom.abduction, rom.adduction, rom.internal, rom.external)
    elif base in ("upper_arm", "thigh", "clavicle", "foot", "toe"):
        if base == "clavicle":
            neutral, flex_dir, abd_dir = rig.lateral(side), body.forward, body.up
        elif base in ("foot", "toe"):
            neutral, flex_dir, abd_dir = body.forward, -body.up, rig.lateral(side)
        else:
            neutral, flex_dir, abd_dir = -body.up, body.forward, rig.lateral(side)
        turn = transport(neutral, r, body.left if base != "clavicle" else body.up)
        dx, dz = turn @ flex_dir, turn @ abd_dir
        rom = ROM[base]
        if base in ("upper_arm", "thigh"):
            # The rest pose's own angles from the anatomical position (a T-pose's arms: 90 abducted).
            x = np.cross(r, dx)
            f0 = _signed_angle(neutral, r, x)
            a0 = _signed_angle(neutral, r, np.cross(r, dz))
    else:
        rom = ROM[base]
        # Hinges and hand: the flexion direction from the anatomy, or from the rest pose's own
        # bend where it agrees; the rest bend is the rest's flexion.
        if base in ("forearm", "shin"):
            parent = rig.ancestor(name, {f"upper_arm.{side}"} if base == "forearm" else {f"thigh.{side}"})
            turn = transport(-body.up, r, body.left)
            default = turn @ (body.forward if base == "forearm" else -body.forward)
            dz = turn @ rig.lateral(side)
        else:
            _, palm, radial = _hand_directions(rig, side)
            wanted = {
                "hand": {f"forearm.{side}"}, "palm": {f"hand.{side}"},
                "finger1": {f"palm.{side}", f"hand.{side}"}, "finger2": {f"finger1.{side}"},
                "finger3": {f"finger2.{side}"}, "thumb1": {f"hand.{side}", f"palm.{side}"},
                "thumb2": {f"thumb1.{side}"}, "thumb3": {f"thumb2.{side}"},
            }[base]
            parent = rig.ancestor(name, wanted)
            if base == "thumb1":
                default, dz = -radial, palm
            elif base in ("thumb2", "thumb3"):
                default, dz = palm - radial, palm + radial
            else:
                default, dz = palm, radial
            default = _perpendicular(default, r, body.forward)
        dx = _perpendicular(default, r, body.forward)
        p = rig.y(parent) if parent is not None else r
        if base in ("forearm", "shin", "finger2", "finger3", "thumb2", "thumb3"):
            bend = np.cross(p, r)
            if np.linalg.norm(bend) > math.sin(math.radians(5.0)) and np.dot(bend, np.cross(r, dx)) > 0.0:
                dx = _unit(np.cross(_unit(bend), r))
        x = np.cross(r, dx)
        if base not in ("thumb1",):
            f0 = _signed_angle(p, r, x)
        if base == "hand":
            a0 = _signed_angle(p, r, np.cross(r, _perpendicular(dz, r, body.up)))
    dx = _perpendicular(dx, r, body.forward)
    dz = _perpendicular(dz - np.dot(dz, dx) * dx, r, np.cross(dx, r))
    x = _unit(np.cross(r, dx))
    result = _bounds(rom, f0, a0, x, r, dx, dz)
    result["roll"] = roll_for(x, m)
    return result


def _chains(rig: _Rig) -> dict:
    """For each trunk bone: (kind, index from the bottom, count, lumbar count); '_reversed':
    the trunk bones that turn the body below them (Rigify's lower spine FK controls)."""
    children: dict[str, list] = {}
    for n, p in rig.parents.items():
        if p is not None:
            children.setdefault(p, []).append(n)

    def below(name):
        stack, out = list(children.get(name, ())), set()
        while stack:
            n = stack.pop()
            if n not in out:
                out.add(n)
                stack.extend(children.get(n, ()))
        return out

    up = rig.body.up
    out: dict = {"_reversed": set()}
    for kind in ("spine", "neck"):
        bones = sorted((n for n, r in rig.roles.items() if r == kind and rig.parents.get(n) is not None),
                       key=lambda n: float(np.dot(rig.heads[n] + 1e-3 * rig.y(n), up)))
        lumbar = math.floor(LUMBAR_FRACTION * len(bones) + 0.5) if len(bones) > 1 else 0
        for i, n in enumerate(bones):
            out[n] = (kind, i, len(bones), lumbar)
            if kind == "spine":
                roles_below = {rig.roles.get(b, "").partition(".")[0] for b in below(n)}
                if "thigh" in roles_below and not roles_below & {"head", "neck", "upper_arm"}:
                    out["_reversed"].add(n)
    for n, r in rig.roles.items():
        if r in ("head", "hips", "chest"):
            out[n] = (r, 0, 1, 0)
    return out


def human_ranges(names: Sequence[str], rest_matrices: Mapping[str, Sequence], parents: Mapping[str, str | None],
                 best_guess: bool = False) -> tuple[str, dict[str, dict]]:
    """The human joint ranges for a skeleton: (naming, {bone: range}).

    ``names`` the bones, ``rest_matrices`` each bone's 4x4 rest matrix in armature space
    (Blender's ``bone.matrix_local``: columns X, Y (head to tail), Z, head), ``parents`` each
    bone's parent name (None for a root). The naming is 'RIGIFY', 'METARIG', 'MIXAMO', 'BVH',
    'GUESS' (only with ``best_guess``: roles from name fragments) or '' (nothing recognised:
    no ranges). A range is a dict of ``swing_x_min``, ``swing_x_max``, ``swing_z_min``,
    ``swing_z_max``, ``twist_min``, ``twist_max`` and ``roll`` [rad], the range's X axis on the
    joint's flexion axis (a positive swing_x flexes). Root bones (and the whole-body 'torso'
    and 'pelvis') get none: the body's orientation is free."""
    naming, roles = recognise(names, parents, best_guess)
    if not naming:
        return "", {}
    rest = {n: np.asarray(rest_matrices[n], dtype=float) for n in names}
    heads = {n: m[:3, 3] for n, m in rest.items()}
    body = body_frame(roles, rest)
    rig = _Rig(roles={n: r for n, r in roles.items()}, rest={n: m[:3, :3] for n, m in rest.items()},
               heads=heads, parents=dict(parents), body=body)
    chains = _chains(rig)
    ranges = {}
    for name, role in roles.items():
        if role in ("torso", "pelvis") or parents.get(name) is None:
            continue
        if float(np.linalg.norm(rig.y(name))) < 0.5:
            continue
        ranges[name] = _bone_range(rig, name, chains)
    return naming, ranges
