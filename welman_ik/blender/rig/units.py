"""Lengths and times as a person reads them (the panel's figures, the drag's header, the
reports): lengths in the scene's unit system and unit scale, in the unit of that system they
read best in, with three significant digits; times in ms below a second, in s above."""

from __future__ import annotations

import math

# Blender's fixed length units: metres per unit, and the symbol its fields show.
LENGTH_UNITS = {
    "KILOMETERS": (1e3, "km"), "METERS": (1.0, "m"), "CENTIMETERS": (1e-2, "cm"), "MILLIMETERS": (1e-3, "mm"),
    "MICROMETERS": (1e-6, "µm"), "MILES": (1609.344, "mi"), "FEET": (0.3048, "'"), "INCHES": (0.0254, '"'),
    "THOU": (2.54e-5, "thou"),
}
DIGITS = 3  # significant digits


# The units a length reads best in, per unit system, smallest first: the largest one the
# length is at least one of (a pin error of 3.08e-7 m is '0.308 µm', a reach '1.35 m').
READABLE = {"METRIC": ("MICROMETERS", "MILLIMETERS", "CENTIMETERS", "METERS", "KILOMETERS"),
            "IMPERIAL": ("THOU", "INCHES", "FEET", "MILES")}


def length_text(scene, metres: float) -> str:
    """``metres`` (scene units: Blender units) in the scene's unit system and unit scale, with
    ``DIGITS`` significant digits in the unit of that system it reads best in (``READABLE``:
    '0.308 µm', '2.81 mm', '1.35 m', '4.92\''), whatever single unit the scene's fields show;
    without a unit system, the bare number."""
    settings = scene.unit_settings if scene is not None else None
    if settings is None or settings.system not in READABLE:
        return _digits(metres)
    value = metres * settings.scale_length
    units = [LENGTH_UNITS[name] for name in READABLE[settings.system]]
    rounded = abs(float(f"{value:.{DIGITS - 1}e}")) if math.isfinite(value) else 0.0  # (0.9996 m is 1.00 m)
    unit = next((u for u in reversed(units) if rounded >= u[0] * (1.0 - 1e-12)), units[0])
    return _with_symbol(value / unit[0], unit[1])


def time_text(milliseconds: float) -> str:
    """A duration with ``DIGITS`` significant digits: in ms below a second, in s above."""
    if math.isfinite(milliseconds) and abs(milliseconds) >= 1000.0:
        return f"{_digits(milliseconds / 1000.0)} s"
    return f"{_digits(milliseconds)} ms"


def _with_symbol(value: float, symbol: str) -> str:
    """Feet and inches take their marks as Blender writes them (4.92', 0.484")."""
    return f"{_digits(value)}{symbol}" if symbol in ("'", '"') else f"{_digits(value)} {symbol}"


def _digits(value: float) -> str:
    """``value`` with ``DIGITS`` significant digits, in fixed notation (0.9996 is '1.00')."""
    if not math.isfinite(value):
        return str(value)
    if value == 0.0:
        return "0"
    rounded = float(f"{value:.{DIGITS - 1}e}")  # the decade after rounding, not before
    decimals = max(0, DIGITS - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{decimals}f}"
