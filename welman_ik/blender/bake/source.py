"""A source of goals for the bake: what gives each frame's goals in place of the armature's
pins (a retarget gives them from another armature's motion). The pipeline's steps ask it only
this, and make no case of what it is."""

from __future__ import annotations

from typing import Protocol


class GoalSource(Protocol):
    """Each frame's goals, from elsewhere than the pins, over ``frames``."""

    frames: list[int]
    rescue: bool  # whether a frame's solve may try the single solve's rescues
    keys_mechanism: bool  # whether the rig's driven and hidden bones are keyed too
    length_unit: float  # how many metres-for-a-grown-person one of its lengths is (its tolerance scales by it)
    prefers_animated: bool  # whether each frame's preferred pose and the solve's start are its animated
    # pose itself, not with the last frame's correction carried on (the source eases its own goals)

    @property
    def bones(self) -> list[str]:
        """The bones the tree holds."""

    def movable(self) -> list[str]:
        """The bones the solve may move."""

    def translating(self) -> frozenset[str]:
        """The bones whose location channels are joints too."""

    def turn_kept(self) -> frozenset[str]:
        """The bones the solve may move by their location only, their turn kept as the frame's
        animated pose has it."""

    def goals(self, tree, index: int) -> list:
        """The goals of the range's ``index``-th frame on ``tree`` (``bake.tree.Tree``)."""

    def frame_key(self, index: int) -> tuple:
        """A key equal on frames whose goals move the same joints."""

    def close_loop(self, plan, sampling, results: dict) -> None:
        """Solve again the frames whose evaluated pose misses the source's goals (a rig whose
        constraints move bones otherwise than the model)."""
