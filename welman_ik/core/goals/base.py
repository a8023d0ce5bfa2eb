"""The one interface every goal kind implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..skeleton import Kinematics


class Goal(ABC):
    """A task for the solvers: an error vector e(q) and its Jacobian J(q) = -de/dq.

    ``residual`` is "where it should be minus where it is" [m], so that a step
    dq with J dq = e closes the gap to first order. ``weight`` [cost] sets its importance
    against goals of the same ``priority``; priority 0 is satisfied first, higher numbers
    are solved in what freedom is left (Yamane & Nakamura 2003).
    """

    def __init__(self, weight: float = 1.0, priority: int = 0):
        if not np.isfinite(weight) or weight < 0.0:
            raise ValueError(f"goal weight must be finite and >= 0, got {weight}")
        self.weight = float(weight)
        self.priority = int(priority)

    rows = 3  # residual rows of one goal
    one_sided = False  # an inequality: met anywhere inside a region (see ``boundary``)

    @abstractmethod
    def residual(self, kin: Kinematics) -> np.ndarray:
        """Error vector e(q), shape (r,) [m]."""

    @abstractmethod
    def jacobian(self, kin: Kinematics) -> np.ndarray:
        """Jacobian of the goal's feature with respect to q, shape (r, n)."""

    @classmethod
    def stack(cls, goals: list[Goal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """Residuals and Jacobians of several goals of this kind, stacked in their order
        (every goal of a kind has the same number of rows). A kind may override this to
        evaluate them in one batch."""
        return np.concatenate([g.residual(kin) for g in goals]), np.vstack([g.jacobian(kin) for g in goals])

    @classmethod
    def batch(cls, goals: list[Goal]) -> KindBatch:
        """Several goals of this kind evaluated together during one solve (their targets
        fixed). A kind may return a batch that gathers its goals' arrays once."""
        return KindBatch(cls, goals)

    def error(self, kin: Kinematics) -> float:
        """Scalar distance from being met [m], compared with the solver's tolerance."""
        return float(np.linalg.norm(self.residual(kin)))

    @classmethod
    def errors(cls, goals: list[Goal], kin: Kinematics) -> np.ndarray:
        """``error`` of several goals of this kind, in their order. A kind may override
        this to evaluate them in one batch."""
        return np.array([g.error(kin) for g in goals], dtype=float)

    @abstractmethod
    def point_pairs(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For CCD: ``(joints (k,), points (k, 3), targets (k, 3))``, world points riding on
        ``joints`` that should coincide with ``targets`` (Welman 1993, section 5.4)."""

    def direction_pairs(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For CCD: ``(joints (k,), directions (k, 3), targets (k, 3), lengths (k,))``, unit
        world directions turning with ``joints`` that should point along the unit
        ``targets``, each weighed as a point at its length would be (Welman 1993, section
        5.4: orientation). None by default."""
        return np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)

    def boundary(self, kin: Kinematics, after: Kinematics) -> tuple[np.ndarray, float] | None:
        """For a one-sided goal met at ``kin`` that a step would carry outside its region (at
        ``after``): the linearised boundary it crossed, as a row r (n,) and a value v such
        that r dq = v moves it onto the boundary (the solvers hold it there, free along the
        boundary, instead of letting it step out and back in turn). None otherwise."""
        return None


class KindBatch:
    """The goals of one kind in one solve: ``errors`` and ``stack`` of them all."""

    def __init__(self, kind: type[Goal], goals: list[Goal]):
        self.kind = kind
        self.goals = goals

    def errors(self, kin: Kinematics) -> np.ndarray:
        return self.kind.errors(self.goals, kin)

    def stack(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        return self.kind.stack(self.goals, kin)

    def residuals(self, kin: Kinematics) -> np.ndarray:
        """The residual rows of ``stack`` alone (a kind may skip its Jacobians here)."""
        return self.stack(kin)[0]
