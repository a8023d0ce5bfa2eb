"""What every operator asks first: is the active object an armature this add-on may edit
(not linked from a library, not in edit mode), and which pose bones are selected. The
operators of the layers above derive from ``ArmatureOperator`` and ``SelectionOperator``."""

from __future__ import annotations

import functools

import numpy as np

from ...core.collection import collection_paused
from . import selection, views


def linked_refusal(obj) -> str:
    """Why armature ``obj`` cannot be edited because it is linked from a library ('' when it
    can). A library override is posed like a local armature: its pose, pins and settings are
    its own (its armature data usually stays linked; nothing here writes to it)."""
    library = obj.library
    if library is None:
        return ""
    # ID.is_editable (not in Blender 3.4): linked data-blocks are not, except editable assets.
    if getattr(obj, "is_editable", False):
        return ""
    return (f"Armature '{obj.name}' is linked from library '{library.name}' and cannot be edited; "
            "make a library override first")


def degenerate_transform(obj) -> bool:
    """The armature's world matrix is not finite or not invertible (zero scale); the same
    test the solver's rig model makes."""
    world = np.array(obj.matrix_world, dtype=float)
    return not np.all(np.isfinite(world)) or abs(np.linalg.det(world[:3, :3])) < 1e-12


def armature_poll(cls, context) -> bool:
    obj = context.object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("The active object is not an armature")
        return False
    refusal = linked_refusal(obj)
    if refusal:
        cls.poll_message_set(refusal)
        return False
    if obj.mode == "EDIT":
        cls.poll_message_set("Leave edit mode: Welman IK works on the pose")
        return False
    return True


def _redrawn(execute):
    @functools.wraps(execute)
    def wrapper(self, context):
        with collection_paused():  # (a bake's thousands of short-lived objects: no full collections)
            result = execute(self, context)
        if "FINISHED" in result:
            views.redraw()
        return result

    return wrapper


def from_sidebar(context) -> bool:
    """The operator is polled for a button of the sidebar (a script or a shortcut is not): the
    button is greyed out, with the reason, where it would only report an error."""
    region = getattr(context, "region", None)
    return region is not None and region.type == "UI"


def animation_refusal(obj, edit: bool = False) -> str:
    """Why armature ``obj`` has nothing to bake (``edit``: to edit), or ''."""
    ad = obj.animation_data
    strips = ad is not None and ad.use_nla and any(not track.mute for track in ad.nla_tracks)
    if ad is None or (ad.action is None and (edit or not strips)):
        return "The armature has no animation to " + ("edit" if edit else "bake") + ": key it first"
    return ""


def selected_pose_bones(obj) -> list:
    return [pb for pb in obj.pose.bones if selection.is_selected(pb) and not selection.is_hidden(pb)]


class ArmatureOperator:
    """An operator on the active armature. Whatever it changes (pins, ranges, settings, the
    pose) shows at once: an ``execute`` that finishes redraws the viewports and the
    Properties editor (``views.redraw``), from the panel, a shortcut or a script alike. Its
    ``execute`` runs with Python's cyclic collector held off (``core.collection``).

    A subclass says in ``sidebar_refusal`` why its sidebar button cannot work now: the button
    is then greyed out with that reason, while a script or a shortcut still runs it and gets
    the same reason as an error (or runs where it can, with what it names itself)."""

    bl_options = {"REGISTER", "UNDO"}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        execute = cls.__dict__.get("execute")
        if execute is not None:
            cls.execute = _redrawn(execute)

    @classmethod
    def poll(cls, context):
        if not armature_poll(cls, context):
            return False
        refusal = cls.sidebar_refusal(context) if from_sidebar(context) else ""
        if refusal:
            cls.poll_message_set(refusal)
            return False
        return True

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        """Why the sidebar's button cannot work on ``context.object`` now, or ''."""
        return ""

    def refused(self, context) -> bool:
        """Execute-time guard (poll already refuses; this keeps any other way in honest):
        report why the active armature cannot be edited, if it cannot."""
        obj = context.object
        refusal = linked_refusal(obj) if obj is not None and obj.type == "ARMATURE" else ""
        if refusal:
            self.report({"ERROR"}, refusal)
        return bool(refusal)


class SelectionOperator(ArmatureOperator):
    """An operator on the selected pose bones."""

    @classmethod
    def poll(cls, context):
        if not super().poll(context):
            return False
        if not selected_pose_bones(context.object):
            cls.poll_message_set("Select one or more pose bones first")
            return False
        return True

    def selection(self, context):
        bones = selected_pose_bones(context.object)
        if not bones:
            self.report({"ERROR"}, "Select one or more pose bones first")
        return bones
