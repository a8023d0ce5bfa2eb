"""What to drag instead of a driven bone (``driven``): the controls reached by following what
drives it (``Controls.trace``: a driven bone's targets, a hidden bone's carrier), ranked
with Rigify's naming where the rig has it (``ORG-``/``DEF-``/``MCH-`` bones; ``<name>_ik``,
``<name>_fk``, ``<name>_tweak`` controls; ``Controls.suggest``): the IK or FK control the
bone follows first, then the plainly named control, what was traced, and the tweaks last.
"""

from __future__ import annotations

import re
from collections import deque

TRACE_DEPTH = 8  # levels of "driven by" followed in search of a control


class Controls:
    """The search for controls, mixed into ``driven``'s reading of a rig, which provides
    ``pose_bones``, ``classify`` (what drives a bone: its targets and whether through an IK
    chain), ``is_control`` and ``rigid_parent``."""

    def trace(self, starts, skip: str) -> tuple[list[str], bool]:
        """Controls reached from bones ``starts`` (breadth first) by following what drives
        each bone that is not a control: a driven bone's targets; a hidden bone's carrier
        (its rigid parent, then its parent). Also whether an IK chain was passed."""
        found: list[str] = []
        through_ik = False
        seen = {skip}
        queue = deque((s, 0) for s in starts)
        while queue:
            name, depth = queue.popleft()
            if name in seen or name not in self.pose_bones:
                continue
            seen.add(name)
            if self.is_control(name):
                found.append(name)
                continue
            if depth >= TRACE_DEPTH:
                continue
            driven = self.classify(name)
            if driven is not None:
                through_ik |= driven.ik
                nexts = driven.targets
            else:
                carrier = self.rigid_parent(name)
                parent = self.pose_bones[name].parent
                nexts = ([carrier[0]] if carrier else []) + ([parent.name] if parent is not None else [])
            queue.extend((n, depth + 1) for n in nexts)
        return found, through_ik

    def suggest(self, name: str, found) -> list[str]:
        """Controls to drag instead of driven bone ``name``, best first."""
        traced, through_ik = self.trace(found.targets, name)
        through_ik |= found.ik
        parts = name_parts(name)
        rigify_ik, rigify_fk, plain, tweaks = [], [], [], []
        if parts is not None:
            base, side, number = parts
            # Rigify's B-Bone segments ('DEF-upper_arm.L.001') belong to the unnumbered limb bone.
            numbers = (number, "") if number and f"ORG-{base}{side}{number}" not in self.pose_bones else (number,)
            org = next((f"ORG-{base}{side}{n}" for n in numbers if f"ORG-{base}{side}{n}" in self.pose_bones), None)
            if org is not None and org != name:
                more, more_ik = self.trace(self._targets_of(org), org)
                traced += [c for c in more if c not in traced]
                through_ik |= more_ik

            def controls(*patterns):
                return [c for n in numbers for p in patterns
                        if (c := p.format(base=base, side=side, number=n)) != name and self.is_control(c)]

            rigify_ik = controls("{base}_ik{side}{number}")
            if not rigify_ik and through_ik:
                rigify_ik = self._ik_control_below(org)
            rigify_fk = controls("{base}_fk{side}{number}")
            plain = controls("{base}{side}{number}")
            tweaks = controls("{base}_tweak{side}{number}", "tweak_{base}{side}{number}")
        following_ik = through_ik or any(c in traced for c in rigify_ik)
        following_fk = any(c in traced for c in rigify_fk)
        switch = rigify_fk + rigify_ik if following_fk and not following_ik else rigify_ik + rigify_fk
        ordered = switch + plain + [c for c in traced if not is_tweak(c)] + tweaks + [c for c in traced if is_tweak(c)]
        out: list[str] = []
        for c in ordered:
            if c != name and c not in out:
                out.append(c)
        return out

    def _targets_of(self, name: str) -> list[str]:
        driven = self.classify(name)
        if driven is not None:
            return driven.targets
        parent = self.pose_bones[name].parent
        return [parent.name] if parent is not None else []

    def _ik_control_below(self, org: str | None) -> list[str]:
        """Rigify's IK control of a limb bone inside an IK chain: that of the first ORG bone
        down the limb that has one (the IK hand for a forearm, the IK foot for a shin)."""
        bone = self.pose_bones[org] if org is not None else None
        for _ in range(3):
            children = [c for c in bone.children if c.name.startswith("ORG-")] if bone is not None else []
            if not children:
                break
            bone = ([c for c in children if c.bone.use_connect] or children)[0]
            parts = name_parts(bone.name)
            if parts is not None and self.is_control(candidate := f"{parts[0]}_ik{parts[1]}{parts[2]}"):
                return [candidate]
        return []


# Rigify's names: 'ORG-forearm.L', 'DEF-upper_arm.L.001', 'MCH-ROT-neck', 'hand_ik.L',
# 'forearm_tweak.L.001', 'spine_fk.002', 'tweak_spine.003'.
_PREFIX = re.compile(r"^(?:DEF|ORG|MCH)-(?:[A-Z]{2,4}-)*")
_NAME = re.compile(r"^(?P<base>.+?)(?P<side>[._-](?:L|R|l|r|Left|Right|left|right))?(?P<number>\.\d+)?$")
_TAG = re.compile(r"(?:_(?:ik|fk|tweak))+$")


def name_parts(name: str) -> tuple[str, str, str] | None:
    """(base, side, number) of a Rigify-style name without its prefix and its control tag:
    'DEF-forearm.L.001' -> ('forearm', '.L', '.001'), 'MCH-forearm_ik.L' -> ('forearm',
    '.L', ''), 'tweak_spine.003' -> ('spine', '', '.003')."""
    match = _NAME.match(_PREFIX.sub("", name))
    if match is None:
        return None
    base = _TAG.sub("", match.group("base"))
    base = base.removeprefix("tweak_")
    if not base:
        return None
    return base, match.group("side") or "", match.group("number") or ""


def is_tweak(name: str) -> bool:
    return "tweak" in name.lower()
