"""The fixture clips' skeletons as the core sees them: joint names and parents read from a BVH
file's hierarchy (the bones Blender's importer makes), for the anatomy and retarget tests."""

from __future__ import annotations

from pathlib import Path


def bvh_joints(path: Path) -> tuple[list, dict]:
    """Joint names and parents of a BVH file's hierarchy (the bones Blender's importer makes)."""
    names, parents, stack = [], {}, []
    for line in path.read_text().splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] in ("ROOT", "JOINT"):
            names.append(words[1])
            parents[words[1]] = stack[-1] if stack else None
            stack.append(words[1])
        elif words[0] == "End":
            stack.append(None)
        elif words[0] == "}":
            stack.pop()
        elif words[0] == "MOTION":
            break
    return names, parents
