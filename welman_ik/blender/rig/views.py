"""Redrawing what shows the add-on's data: the 3D viewports (pin and range markers, the
sidebar) and the Properties editor.

Blender redraws an editor when a notifier says that what it shows changed. The add-on's
settings, pins and ranges are its own properties, and the pose is written in bulk
(``foreach_set``); neither sends one, so without this the markers of a new pin would appear,
and those of a removed one vanish, only when something else redrew the viewport. Every
operator that changes them calls ``redraw``, as do the pins' and ranges' ``update`` callbacks
(a script's assignment) and undo and redo (``register``)."""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

SHOWN_IN = ("VIEW_3D", "PROPERTIES")


def redraw(areas=SHOWN_IN) -> None:
    """Tag every area of type in ``areas`` for redraw, in every window (none without one)."""
    wm = bpy.context.window_manager
    for window in wm.windows if wm is not None else ():
        screen = window.screen
        for area in screen.areas if screen is not None else ():
            if area.type in areas:
                area.tag_redraw()


def redraw_on_update(_self, _context) -> None:
    """A property's ``update`` callback: redraw what shows it."""
    redraw()


@persistent
def _redraw_after_undo(*_args) -> None:
    redraw()


HANDLERS = ("undo_post", "redo_post")


def register() -> None:
    for name in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if _redraw_after_undo not in handlers:
            handlers.append(_redraw_after_undo)


def unregister() -> None:
    for name in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while _redraw_after_undo in handlers:
            handlers.remove(_redraw_after_undo)
