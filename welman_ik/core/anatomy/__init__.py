"""Human anatomy for rigs: the naming of common skeletons and each bone's role
(``naming``), and human joint ranges mapped onto a rig's own bone axes (``motion``). Pure
numpy; never imports bpy."""

from .motion import (
    CERVICAL,
    HEAD_SHARE,
    LUMBAR_FRACTION,
    LUMBAR_SHARE,
    ROM,
    THORACOLUMBAR,
    Body,
    Rom,
    body_frame,
    human_ranges,
    range_axes,
    roll_for,
    transport,
)
from .naming import NAMING_LABELS, NAMINGS, depth, recognise, split_side

__all__ = [
    "CERVICAL", "HEAD_SHARE", "LUMBAR_FRACTION", "LUMBAR_SHARE", "NAMINGS", "NAMING_LABELS", "ROM", "THORACOLUMBAR",
    "Body", "Rom", "body_frame", "depth", "human_ranges", "range_axes", "recognise", "roll_for", "split_side",
    "transport",
]
