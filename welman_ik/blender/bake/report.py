"""Step 7 of the bake, what it tells the user: missed frames as runs of frames, and the list of misses the
panel shows."""

from __future__ import annotations


def frame_ranges(frames, limit: int = 8) -> str:
    """Frames as runs, '3-7, 12, 20-21', the first ``limit`` runs and how many more."""
    runs: list[list[int]] = []
    for f in sorted(frames):
        if runs and f <= runs[-1][1] + 1:
            runs[-1][1] = f
        else:
            runs.append([f, f])
    text = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:limit])
    return text + (f" and {len(runs) - limit} more runs" if len(runs) > limit else "")


def list_misses(settings, misses) -> None:
    """Store the missed frames where the panel lists them (frame, bone, miss from the pin's
    own location, goals missed, miss against the goal asked for, whether it was eased)."""
    settings.bake_misses.clear()
    for frame, bone, error, goals, asked, eased in misses:
        item = settings.bake_misses.add()
        item.frame, item.bone, item.error, item.goals = frame, bone, error, goals
        item.eased_error, item.eased = asked, eased
    settings.active_miss_index = 0
