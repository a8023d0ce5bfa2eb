"""Lengths as the scene shows them: in its unit system, its length unit and its unit scale,
the way Blender's own fields show them (the panel's figures, the drag's header), so a
tolerance and the errors measured against it read in the same unit."""

from __future__ import annotations

import math

import bpy

# Blender's fixed length units: metres per unit, and the symbol its fields show.
LENGTH_UNITS = {
    "KILOMETERS": (1e3, "km"), "METERS": (1.0, "m"), "CENTIMETERS": (1e-2, "cm"), "MILLIMETERS": (1e-3, "mm"),
    "MICROMETERS": (1e-6, "µm"), "MILES": (1609.344, "mi"), "FEET": (0.3048, "'"), "INCHES": (0.0254, '"'),
    "THOU": (2.54e-5, "thou"),
}
DIGITS = 3  # significant digits


def length_text(scene, metres: float) -> str:
    """``metres`` (scene units: Blender units) as the scene's fields show lengths: 'ADAPTIVE'
    picks the unit (Blender's ``bpy.utils.units``; below its smallest unit's display, the
    smallest unit with ``DIGITS`` significant digits), a fixed unit keeps to it with
    ``DIGITS`` significant digits (a small error in metres: '0.00000321 m')."""
    settings = scene.unit_settings if scene is not None else None
    if settings is None or settings.system == "NONE":
        return _digits(metres)
    value = metres * settings.scale_length
    unit = LENGTH_UNITS.get(settings.length_unit)
    if unit is None:  # 'ADAPTIVE'
        smallest = LENGTH_UNITS["MICROMETERS" if settings.system == "METRIC" else "THOU"]
        if value != 0.0 and abs(value) < smallest[0]:
            return _with_symbol(value / smallest[0], smallest[1])
        return bpy.utils.units.to_string(settings.system, "LENGTH", value, precision=DIGITS)
    return _with_symbol(value / unit[0], unit[1])


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
