"""Settings and pins, stored on the armature object and saved in the .blend."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    BoolVectorProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from . import targets
from .views import redraw_on_update

SOLVER_ITEMS = [
    ("CCD", "CCD", ("Turns one joint at a time toward the goal, from the end of the chain inward: quick on every "
     "mouse move, and the joints near the dragged bone do most of the bending (cyclic coordinate descent, Welman "
     "1993)")),
    ("JACOBIAN_TRANSPOSE", "Jacobian Transpose", ("Nudges every joint along the goals' pull at once: smooth, evenly "
     "shared bends, slower to settle on far or many goals (Jacobian transpose, Welman 1993)")),
    ("SR_INVERSE", "SR Inverse", ("Holds the pins first, then follows the drag, then keeps every other joint near "
     "the preferred pose; steady where a limb straightens (singularity-robust inverse with task priority, Yamane "
     "& Nakamura 2003)")),
    ("QUASI_NEWTON", "Quasi-Newton", ("Finds the pose nearest every goal at once and keeps each joint inside its "
     "limits exactly; slower, best where the limits are tight (quasi-Newton, limits as linear constraints, Zhao & "
     "Badler 1989)")),
]

# (identifier, name, description, icon, number): the numbers are the ones saved files hold.
PIN_KINDS = [
    ("POSITION", "Position", "Hold a point along the bone at a place in the world", "CON_LOCLIKE", 0),
    ("ORIENTATION", "Orientation", "Hold the bone's orientation (all of it, or only some of its axes)", "CON_ROTLIKE",
     1),
    ("POSE", "Pose", "Hold a point along the bone and the bone's orientation", "CON_TRANSLIKE", 2),
    ("LINE", "Line", "Keep a point along the bone on a line, free along it", "CON_FOLLOWPATH", 3),
    ("PLANE", "Plane", "Keep a point along the bone in a plane, free within it", "MESH_PLANE", 4),
    ("AIM", "Aim", "Keep one of the bone's axes pointing at a place in the world", "CON_TRACKTO", 5),
    ("REGION", "Region", "Keep a point along the bone within a sphere", "CON_DISTLIMIT", 6),
    ("TOGETHER", "Together", "Bring a point along the bone and a point on another bone together; both move",
     "LINKED", 7),
    ("BALANCE", "Balance", "Keep the body's centre of mass over a point, or over the support of the planted pins",
     "MOD_PHYSICS", 8),
    ("FLOOR", "Floor", "Keep a point along the bone on or above a plane (the floor, a table top); free above it",
     "AXIS_TOP", 9),
]

AIM_AXIS_ITEMS = [(a, a, f"The bone's {a} axis") for a in ("X", "Y", "Z", "-X", "-Y", "-Z")]

# Library overrides (bpy.props ``override``): an overridden armature keeps settings and pins
# of its own in the overriding file only when every property on the way down from
# ``Object.welman_ik`` is LIBRARY_OVERRIDABLE. The pins collection also needs USE_INSERTION
# (pins added in the override are saved as insertions) and NO_PROPERTY_NAME: the override
# diff otherwise matches items by their ``name``, which pins leave empty, so every insertion
# after the first was lost on save. Pins stored in the library itself cannot be removed from
# an override (Blender keeps every item of the reference); the operators disable them.
OVERRIDABLE = {"LIBRARY_OVERRIDABLE"}
# Nothing of the add-on's is animated: a solve reads each setting and pin as it is, so a key on
# one would only be a trap (the panel shows no keyframe dot).
STILL: set = set()
# What the viewport and the sidebar show (pins' and ranges' markers, the settings) is redrawn when a
# script changes it.
SHOWN = redraw_on_update
OVERRIDABLE_COLLECTION = {"LIBRARY_OVERRIDABLE", "USE_INSERTION", "NO_PROPERTY_NAME"}

REFERENCE_ITEMS = [
    ("START", "Start", "The pose when the drag began (a bake: each frame's animated pose)"),
    ("REST", "Rest", "The rest pose"),
    ("NONE", "None", "No preferred pose"),
]

ROOT_MOTION_ITEMS = [
    ("KEEP", "Keep", "A bake keeps the root bone on its animated path exactly; the limbs do the work"),
    ("FOLLOW", "Follow", ("A bake keeps the root on its animated path as a goal below the pins: it leaves "
                          "the path only on the frames and by the amount a pin needs")),
    ("FREE", "Free", "A bake moves the root like any joint"),
]

KEYFRAME_ITEMS = [
    ("ALWAYS", "Always", "Key every solved pose"),
    ("AUTOKEY", "Auto Keying", "Key only when Blender's auto-keying is on"),
    ("NEVER", "Never", "Never key"),
]


def _recorded(pin, context) -> None:
    """A pin's target set or changed: its fields recorded in the target's space."""
    targets.record_in_target(pin, context)
    redraw_on_update(pin, context)


class WELMAN_IK_Pin(bpy.types.PropertyGroup):
    bone: StringProperty(name="Bone", description="Pose bone name", override=OVERRIDABLE, options=STILL, update=SHOWN)
    kind: EnumProperty(name="Kind", items=PIN_KINDS, default="POSITION", description="What is held",
                       override=OVERRIDABLE, options=STILL, update=SHOWN)
    anchor: FloatProperty(
        name="Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR",
        description="The held point along the bone: 0 head, 1 tail", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    location: FloatVectorProperty(
        name="Location", size=3, subtype="TRANSLATION", unit="LENGTH",
        description="Goal point: in the world, or in the target's space when the pin has a target", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    rotation: FloatVectorProperty(
        name="Rotation", size=4, subtype="QUATERNION", default=(1.0, 0.0, 0.0, 0.0),
        description="Goal orientation (w, x, y, z): in the world, or in the target's space", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    axes: BoolVectorProperty(
        name="Axes", size=3, default=(True, True, True), subtype="XYZ",
        description="Which of the bone's own axes an orientation pin holds", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    direction: FloatVectorProperty(
        name="Direction", size=3, subtype="DIRECTION", default=(0.0, 0.0, 1.0),
        description="Line direction or plane normal: in the world, or in the target's space", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    radius: FloatProperty(name="Radius", min=0.0, default=0.05, unit="LENGTH",
                          description="Region: the sphere's radius", override=OVERRIDABLE, options=STILL, update=SHOWN)
    aim_axis: EnumProperty(name="Aim Axis", items=AIM_AXIS_ITEMS, default="Y", override=OVERRIDABLE, options=STILL, update=SHOWN,
                           description="Aim: the bone axis that points at the location")
    target_bone: StringProperty(name="Target Bone", override=OVERRIDABLE, options=STILL, update=_recorded,
                                description="Together: the other bone whose point this one meets; with a target "
                                "armature: the bone of it the pin follows")
    target_object: PointerProperty(
        name="Target", type=bpy.types.Object, override=OVERRIDABLE, options=STILL, update=_recorded,
        description="The object (or, with Target Bone, the other armature's bone) the pin follows: its goal moves "
                    "with it on every frame; empty: the goal stays in the world",
    )
    # The space the pin's location, rotation and direction are recorded in (``rig.targets``).
    space_object: PointerProperty(type=bpy.types.Object, override=OVERRIDABLE, options={"HIDDEN"})
    space_bone: StringProperty(override=OVERRIDABLE, options={"HIDDEN"})
    space_name: StringProperty(override=OVERRIDABLE, options={"HIDDEN"})
    target_anchor: FloatProperty(
        name="Target Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR", override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Together: the point along the other bone: 0 head, 1 tail",
    )
    use_support: BoolProperty(
        name="Support Polygon", default=False, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Balance: keep the centre of mass over the support polygon of the enabled position and pose pins "
                    "instead of over the location",
    )
    weight: FloatProperty(name="Weight", min=0.0, default=1.0, soft_max=10.0,
                          description="Importance against other pins", override=OVERRIDABLE, options=STILL, update=SHOWN)
    enabled: BoolProperty(name="Enabled", default=True, description="A disabled pin is kept but ignored",
                          override=OVERRIDABLE, options=STILL, update=SHOWN)
    frame_start: IntProperty(name="Start", default=0, description="First frame the pin is in force (bake); Start "
                             "and End both 0: always", override=OVERRIDABLE, options=STILL, update=SHOWN)
    frame_end: IntProperty(name="End", default=0, description="Last frame the pin is in force (bake); Start "
                           "and End both 0: always",
                           override=OVERRIDABLE, options=STILL, update=SHOWN)
    follow: BoolProperty(name="Follow", default=False, override=OVERRIDABLE, options=STILL, update=SHOWN,
                         description="Bake: the goal is where the bone's own animation puts it on each frame")


def _angle(name: str, default: float, description: str):
    return FloatProperty(name=name, default=default, subtype="ANGLE", soft_min=-3.14159, soft_max=3.14159,
                         min=-6.28319, max=6.28319, description=description, override=OVERRIDABLE, options=STILL, update=SHOWN)


class WELMAN_IK_Range(bpy.types.PropertyGroup):
    """A spherical joint range (Yamane & Nakamura 2003): the bone's Y axis may swing inside an
    elliptic cone about the range's X and Z axes, and twist about Y, relative to its rest
    orientation in its parent. The range's axes are the bone's rest X and Z turned by
    ``roll`` about Y (a preset turns them onto a hinge's bend axis, whatever the bone roll)."""

    use: BoolProperty(name="Use", default=False, override=OVERRIDABLE, options=STILL, update=SHOWN, description="The range is in force")
    swing_x_min: _angle("Swing X Min", -0.7854, "How far the bone may swing about the range's X axis, negative way")
    swing_x_max: _angle("Swing X Max", 0.7854, "How far the bone may swing about the range's X axis, positive way")
    swing_z_min: _angle("Swing Z Min", -0.7854, "How far the bone may swing about the range's Z axis, negative way")
    swing_z_max: _angle("Swing Z Max", 0.7854, "How far the bone may swing about the range's Z axis, positive way")
    twist_min: _angle("Twist Min", -0.7854, "Twist about the bone's own Y axis, negative way")
    twist_max: _angle("Twist Max", 0.7854, "Twist about the bone's own Y axis, positive way")
    roll: _angle("Roll", 0.0, "The range's X and Z axes: the bone's rest X and Z turned this far about Y")


class WELMAN_IK_Miss(bpy.types.PropertyGroup):
    """One baked frame whose evaluated pose missed a goal: the worst goal's bone and miss."""

    frame: IntProperty(name="Frame", override=OVERRIDABLE, options=STILL)
    bone: StringProperty(name="Bone", override=OVERRIDABLE, options=STILL)
    error: FloatProperty(name="Miss", unit="LENGTH", precision=5, override=OVERRIDABLE, options=STILL)
    goals: IntProperty(name="Goals Missed", override=OVERRIDABLE, options=STILL, description="Goals missed on that frame")
    eased_error: FloatProperty(name="Eased Miss", unit="LENGTH", precision=5, override=OVERRIDABLE, options=STILL,
                               description="The same goal's miss against what the solver was asked on that frame "
                                           "(the goal eased toward the animation); equal to Miss where not eased")
    eased: BoolProperty(name="Eased", override=OVERRIDABLE, options=STILL,
                        description="The goal was eased toward the animation on that frame (an open range end)")


RETARGET_KINDS = [
    ("POSITION", "Position", "The target bone's point follows the source bone's, scaled from the hips", "CON_LOCLIKE",
     0),
    ("ORIENTATION", "Orientation", "The target bone turns as the source bone turns in the world", "CON_ROTLIKE", 1),
    ("POSE", "Pose", "Both: position and orientation", "CON_TRANSLIKE", 2),
]


class WELMAN_IK_RetargetPair(bpy.types.PropertyGroup):
    """One line of the retarget map: which source bone a target bone follows, and how."""

    target_bone: StringProperty(name="Target Bone", override=OVERRIDABLE, options=STILL, update=SHOWN,
                                description="The bone of this armature that follows")
    source_bone: StringProperty(name="Source Bone", override=OVERRIDABLE, options=STILL, update=SHOWN,
                                description="The bone of the source armature it follows")
    kind: EnumProperty(name="Kind", items=RETARGET_KINDS, default="ORIENTATION", override=OVERRIDABLE,
                       options=STILL, update=SHOWN, description="What of the source bone it follows")
    weight: FloatProperty(name="Weight", min=0.0, default=1.0, soft_max=10.0, override=OVERRIDABLE, options=STILL,
                          update=SHOWN, description="Importance against the other lines of the map (0: ignored)")


class WELMAN_IK_GroupMiss(bpy.types.PropertyGroup):
    """A retarget's goal group and its largest miss, measured on the evaluated pose against the
    scaled source."""

    group: StringProperty(name="Group", override=OVERRIDABLE, options=STILL,
                          description="'plants', 'hips', 'hands', 'feet', 'head' or 'orientations'")
    error: FloatProperty(name="Largest Miss", precision=6, override=OVERRIDABLE, options=STILL,
                         description="[m], or [rad] for the orientations")
    frame: IntProperty(name="Frame", override=OVERRIDABLE, options=STILL, description="Where it is largest")
    bone: StringProperty(name="Bone", override=OVERRIDABLE, options=STILL, description="The bone that misses most")


def other_armature(settings, obj) -> bool:
    """What the Source field offers: armatures other than this one."""
    return obj.type == "ARMATURE" and obj != settings.id_data


OPERATION_ITEMS = [
    ("DRAG", "Drag", "A drag, from the mouse or a script"),
    ("EDIT", "Motion Edit", "A drag of one frame, spread over its neighbours"),
    ("BAKE", "Bake", "The pins held through every frame into a new action"),
    ("RETARGET", "Retarget", "A clip baked onto this armature"),
]


class WELMAN_IK_LastSolve(bpy.types.PropertyGroup):
    """Figures of the last solve, written by the add-on after every solve.

    Plain stored properties, shown as labels. Property groups here carry no methods and
    no getter callbacks: either keeps a process that imports bpy as a module from exiting.
    """

    iterations: IntProperty(name="Iterations", override=OVERRIDABLE, options=STILL)
    drag_error: FloatProperty(name="Drag Error", unit="LENGTH", precision=6, override=OVERRIDABLE, options=STILL)
    max_pin_error: FloatProperty(name="Max Pin Error", unit="LENGTH", precision=6, override=OVERRIDABLE, options=STILL)
    milliseconds: FloatProperty(name="Milliseconds", precision=2, override=OVERRIDABLE, options=STILL)
    converged: BoolProperty(name="Converged", override=OVERRIDABLE, options=STILL)
    message: StringProperty(name="Message", override=OVERRIDABLE, options=STILL,
                            description="One line: what the last solve missed and why (empty when converged)")
    eased_pin_error: FloatProperty(
        name="Eased Pin Error", unit="LENGTH", precision=6, override=OVERRIDABLE, options=STILL,
        description="A bake whose goals were eased toward the animation (near an open range end): the largest pin "
                    "error against the eased goals the solver was asked for; Max Pin Error is each pin's distance "
                    "from its own location. Equal to Max Pin Error when nothing was eased")
    groups: CollectionProperty(type=WELMAN_IK_GroupMiss, override=OVERRIDABLE_COLLECTION, options=STILL,
                               name="Goal Groups", description="After a retarget: each goal group's largest miss "
                               "on the evaluated pose, against the scaled source")
    operation: EnumProperty(name="Operation", items=OPERATION_ITEMS, default="DRAG", override=OVERRIDABLE,
                            options=STILL, description="What the figures are of: the panel shows what applies to it")
    eased_frames: IntProperty(name="Eased Frames", override=OVERRIDABLE, options=STILL,
                              description="How many frames of the last bake had a pin's goal eased toward the "
                                          "animation (0: every pin was asked for its own location)")


class WELMAN_IK_Settings(bpy.types.PropertyGroup):
    solver: EnumProperty(name="Solver", items=SOLVER_ITEMS, default="SR_INVERSE", description="The IK algorithm",
                         override=OVERRIDABLE, options=STILL, update=SHOWN)
    max_iterations: IntProperty(
        name="Max Iterations", min=1, soft_max=1000, default=300,
        description="Iterations per solve (per mouse event while dragging)", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    tolerance: FloatProperty(
        name="Tolerance", min=1e-9, soft_max=0.01, default=1e-5, precision=6, unit="LENGTH",
        description="A goal within this distance is met", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    damping: FloatProperty(
        name="Damping", min=1e-9, soft_max=1.0, default=1e-3, precision=5,
        description="The SR inverse's k, relative to the scale of each task's Jacobian", override=OVERRIDABLE, options=STILL, update=SHOWN,
    )
    reference: EnumProperty(
        name="Preferred Pose", items=REFERENCE_ITEMS, default="START", override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="The pose the other joints keep to, as the lowest-priority task",
    )
    reference_weight: FloatProperty(
        name="Preference", min=0.0, soft_max=1.0, default=1.0, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="How strongly the joints the goals leave free keep to the preferred pose "
        "(the share of the way back taken per iteration; 0: off)",
    )
    gaze: BoolProperty(
        name="Keep Gaze", default=True, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="While the body moves, the neck keeps the head looking where it looked (unless a pin is on the "
                    "head), below every pin and the drag",
    )
    keep_balance: BoolProperty(
        name="Keep Balance", default=True, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="While two or more bones are pinned where they stand (the feet), a drag keeps the body's centre "
                    "of mass over them: the trunk leans and the hips shift back, but the body does not tip over",
    )
    gaze_bone: StringProperty(
        name="Gaze Bone", default="", override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="The bone that keeps its world orientation (empty: the head, found by the rig's naming)",
    )
    pins_first: BoolProperty(
        name="Pins First", default=True, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="On conflict, pins hold and the dragged bone stops at the closest reachable point; "
        "off: the drag wins and pins yield",
    )
    chain_length: IntProperty(
        name="Chain Length", min=0, soft_max=20, default=0, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="0: the whole body moves; N: only the dragged bone and its N - 1 nearest ancestors move",
    )
    keyframes: EnumProperty(name="Keyframes", items=KEYFRAME_ITEMS, default="ALWAYS",
                            description="When a solved pose is keyed", override=OVERRIDABLE, options=STILL, update=SHOWN)
    root_motion: EnumProperty(
        name="Root Motion", items=ROOT_MOTION_ITEMS, default="FOLLOW", override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="What a bake does with the root bone's animated path",
    )
    contact_height: FloatProperty(
        name="Contact Height", min=0.0, default=0.03, unit="LENGTH", precision=3, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts: a bone is planted within this height of its lowest point",
    )
    contact_speed: FloatProperty(
        name="Contact Speed", min=0.01, soft_max=2.0, default=0.15, step=1, unit="VELOCITY", precision=2,
        override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts: a planted point moves no faster than this (a foot on the ground creeps at a few "
                    "centimetres a second; a walking foot in the air swings at over a metre a second)",
    )
    contact_min_frames: IntProperty(
        name="Contact Frames", min=1, default=5, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts: the shortest plant, in frames",
    )
    contact_drift: FloatProperty(
        name="Contact Drift", min=0.0, default=0.025, unit="LENGTH", precision=3, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts: the farthest a planted point may wander over the whole plant (a slow creep "
                    "beyond it is split into separate plants)",
    )
    contact_knee_bend: FloatProperty(
        name="Knee Bend", min=0.0, max=1.2, default=0.0873, subtype="ANGLE", override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts: the least the knee stays bent to reach a plant; frames where the leg would "
                    "have to be straighter are left out of the plant",
    )
    contact_floor: BoolProperty(
        name="Floor", default=False, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Detect Contacts also pins each foot's heel and toe on or above the clip's floor (found from "
                    "its contacts), on every frame",
    )
    motion_falloff: IntProperty(
        name="Falloff", min=0, soft_max=100, default=10, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Frames an edit blends into on either side (Edit Motion), and over which a bake eases a "
                    "bone back onto its animation when its pin ends",
    )
    pins: CollectionProperty(type=WELMAN_IK_Pin, override=OVERRIDABLE_COLLECTION)
    active_pin_index: IntProperty(name="Active Pin", default=0, override=OVERRIDABLE, options=STILL)
    last_solve: PointerProperty(type=WELMAN_IK_LastSolve, override=OVERRIDABLE, options=STILL)
    bake_misses: CollectionProperty(
        type=WELMAN_IK_Miss, override=OVERRIDABLE_COLLECTION,
        name="Missed Frames", description="The frames of the last bake or edit whose evaluated pose missed a goal",
    )
    active_miss_index: IntProperty(name="Active Missed Frame", default=0, override=OVERRIDABLE, options=STILL)
    retarget_map: CollectionProperty(
        type=WELMAN_IK_RetargetPair, override=OVERRIDABLE_COLLECTION, name="Retarget Map",
        description="Which bone of the source armature each bone of this one follows when a clip is retargeted",
    )
    active_retarget_index: IntProperty(name="Active Retarget Line", default=0, override=OVERRIDABLE, options=STILL)
    retarget_source: PointerProperty(
        type=bpy.types.Object, name="Source", override=OVERRIDABLE, options=STILL, update=SHOWN, poll=other_armature,
        description="The armature whose motion the panel's Retarget bakes onto this one",
    )
    retarget_floor: BoolProperty(
        name="Floor", default=True, override=OVERRIDABLE, options=STILL, update=SHOWN,
        description="Retarget keeps each foot's heel and toe on or above the target's floor",
    )
    ranges_offered: BoolProperty(
        name="Ranges Offered", default=False, override=OVERRIDABLE, options=STILL,
        description="The panel has offered this rig's human joint ranges once (the offer is then dismissed)",
    )


CLASSES = (WELMAN_IK_Pin, WELMAN_IK_Range, WELMAN_IK_Miss, WELMAN_IK_RetargetPair, WELMAN_IK_GroupMiss, WELMAN_IK_LastSolve,
           WELMAN_IK_Settings)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.welman_ik = PointerProperty(type=WELMAN_IK_Settings, override=OVERRIDABLE, options=STILL)
    bpy.types.PoseBone.welman_ik_range = PointerProperty(type=WELMAN_IK_Range, override=OVERRIDABLE, options=STILL)
    bpy.types.PoseBone.welman_ik_mass = FloatProperty(
        name="Mass", min=0.0, soft_max=100.0, default=0.0, unit="MASS", override=OVERRIDABLE, options=STILL,
        description="Balance: this bone's mass; 0: from the segment-mass table (or its length, if the rig's "
                    "naming is not recognised)",
    )


def unregister() -> None:
    del bpy.types.PoseBone.welman_ik_mass
    del bpy.types.PoseBone.welman_ik_range
    del bpy.types.Object.welman_ik
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
