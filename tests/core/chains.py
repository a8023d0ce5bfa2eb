"""Small skeletons for the core tests."""

from __future__ import annotations

import numpy as np

from welman_ik.core import Skeleton


def translation(v) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = v
    return m


def chain(lengths, axes, lower=None, upper=None, mobility=None, scale: float = 1.0) -> Skeleton:
    """A serial chain: joint i sits at the end of link i-1 (links along +x)."""
    n = len(axes)
    rest = np.stack([translation([scale * (lengths[i - 1] if i > 0 else 0.0), 0.0, 0.0]) for i in range(n)])
    return Skeleton(
        parent=np.arange(n) - 1,
        prismatic=np.zeros(n, dtype=bool),
        axis=np.asarray(axes, dtype=float),
        rest=rest,
        lower=np.full(n, -np.inf) if lower is None else lower,
        upper=np.full(n, np.inf) if upper is None else upper,
        mobility=np.ones(n) if mobility is None else mobility,
    )


def planar_chain(n: int, length: float = 1.0, scale: float = 1.0, **kw) -> Skeleton:
    return chain([length] * n, [[0, 0, 1]] * n, scale=scale, **kw)


def tip_local(length: float = 1.0, scale: float = 1.0) -> np.ndarray:
    return np.array([scale * length, 0.0, 0.0])
