"""Human anatomy for rigs: the naming of common skeletons and each bone's role
(``naming``), human joint ranges mapped onto a rig's own bone axes (``motion``), and which
source bone each bone of a rig follows when a clip is retargeted onto it (``retarget``). Pure
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
from .retarget import RetargetPair, leg_length, leg_scale, retarget_map

__all__ = [
    "CERVICAL", "HEAD_SHARE", "LUMBAR_FRACTION", "LUMBAR_SHARE", "NAMINGS", "NAMING_LABELS", "ROM", "THORACOLUMBAR",
    "Body", "RetargetPair", "Rom", "body_frame", "depth", "human_ranges", "leg_length", "leg_scale", "range_axes",
    "recognise", "retarget_map", "roll_for", "split_side", "transport",
]
