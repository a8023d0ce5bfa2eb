"""Which pins hold on a frame of a bake, and how much of their way from the animation to
their own place their goals ask for there (near an open range end the corrections fade)."""

from __future__ import annotations

from ..pins.goals import SOLVABLE_PIN_KINDS


def has_frames(pin) -> bool:
    """Whether ``pin`` has a frame range (Start and End both 0: in force always)."""
    return bool(pin.frame_start or pin.frame_end)


def in_force(pin, frame: int | None) -> bool:
    """Whether ``pin`` is in force on ``frame``: always without a frame range, else from Start
    to End, both included (every pin for ``frame`` None)."""
    return frame is None or not has_frames(pin) or pin.frame_start <= frame <= pin.frame_end


def pins_on(settings, frame: int) -> list:
    """Enabled pins in force on ``frame``."""
    return [p for p in settings.pins if p.enabled and p.kind in SOLVABLE_PIN_KINDS and in_force(p, frame)]


def pins_by_frame(settings, frames: list[int]) -> dict[int, list]:
    """``pins_on`` of each of ``frames``, every pin's settings read once."""
    ranges = [(p, (p.frame_start, p.frame_end) if has_frames(p) else None) for p in settings.pins
              if p.enabled and p.kind in SOLVABLE_PIN_KINDS]
    return {f: [p for p, span in ranges if span is None or span[0] <= f <= span[1]] for f in frames}


def pin_share(pin, share: float) -> float:
    """The share of ``pin``'s way from the animation to its own place that its goal asks for
    on a frame whose range weight is ``share``. A fixed pin with its own frame range (a plant,
    or any pin the user gave frames) holds in full on every frame it is in force, up to an
    open range end too: Detect Contacts places a plant cut by the range's end where the
    animation has it on that end frame, so nothing jumps there. A pin in force always is
    eased toward the animation near an open range end instead."""
    return 1.0 if not pin.follow and has_frames(pin) else share


def is_eased(pin, share: float) -> bool:
    """Whether ``pin``'s goal on a frame with range weight ``share`` is eased away from its own
    place (a follow pin's own place is the animation's, so easing leaves it there; an aim, a
    together and a balance pin hold in full)."""
    return pin_share(pin, share) < 1.0 and not pin.follow and pin.kind not in {"TOGETHER", "BALANCE", "AIM"}
