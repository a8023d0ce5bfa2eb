"""The task-priority step with the singularity-robust inverse (Yamane & Nakamura 2003,
sections 2-3), the step of ``sr_inverse``'s iterations.

Each priority level l is solved with the SR inverse

    A* = A^T (A A^T + k I)^-1

applied to its Jacobian restricted to the null space N of all higher levels:

    dq_l = (J_l N)* (e_l - J_l (dq_0 + ... + dq_l-1)),   N = I - V V^T

(V spans the rows of J_0..J_l-1). N is never formed: J_l N is J_l - (J_l V) V^T, with V
grown level by level from the Cholesky factors of the levels' small Gram matrices
(directions whose singular value is below 1e-6 of the largest count as rank deficiency),
and a diagonal last level (the reference pose's) is solved in closed form.
"""

from __future__ import annotations

import numpy as np


def sr_inverse(a: np.ndarray, e: np.ndarray, k: float) -> np.ndarray:
    """A^T (A A^T + k s I)^-1 e, with s the mean of diag(A A^T): the damping is relative to
    the task's own scale, so it means the same whatever the units and joint weights."""
    if a.shape[0] == 0 or a.shape[1] == 0:
        return np.zeros(a.shape[1])
    gram = a @ a.T
    diagonal = gram.reshape(-1)[:: gram.shape[0] + 1]  # a view: adding to it damps gram
    diagonal += k * max(float(diagonal.sum()) / gram.shape[0], 1e-300)
    return a.T @ np.linalg.solve(gram, e)


def row_basis(a: np.ndarray, rank_tol: float = 1e-6) -> np.ndarray:
    """(n, r) orthonormal columns spanning the row space of ``a`` (m, n), from the
    eigenvectors of the small m x m matrix A A^T: singular values below ``rank_tol`` of the
    largest (or of 1) are left out as rank deficiency."""
    if a.shape[0] == 0:
        return np.zeros((a.shape[1], 0))
    gram = a @ a.T
    try:  # full rank, the usual case: V = A^T L^-T with L L^T = A A^T
        lower = np.linalg.cholesky(gram)
        diagonal = np.abs(np.diagonal(lower))
        if diagonal.min() > rank_tol * max(float(diagonal.max()), 1.0):
            return np.linalg.solve(lower, a).T
    except np.linalg.LinAlgError:
        pass
    values, vectors = np.linalg.eigh(gram)
    keep = values > rank_tol**2 * max(float(values[-1]), 1.0)
    return (a.T @ vectors[:, keep]) / np.sqrt(values[keep])


def prioritized_step(levels: list[tuple[np.ndarray, np.ndarray]], k) -> list[np.ndarray]:
    """Each level's part of the task-priority step, for ``levels`` [(J_l, e_l)], highest first;
    ``k``: the damping of each level. Each level's Jacobian is restricted to the null space
    of those above as J_l - (J_l V) V^T, V an orthonormal basis of their rows, grown level by
    level from the restricted Jacobians (no n x n projector is formed).

    The last level may be diagonal (J_l given as its diagonal w, as the reference pose's is):
    its part is then the exact weighted least-squares step in the null space of the levels
    above, x = t - W^-2 V (V^T W^-2 V)^-1 V^T t with t = W^-1 e, a solve the size of the
    levels above instead of one the size of the tree (undamped: W is well conditioned)."""
    n = levels[0][0].shape[-1]
    total = np.zeros(n)
    parts = []
    basis = np.zeros((n, 0))
    last = len(levels) - 1
    for level, ((jac, err), k_level) in enumerate(zip(levels, k)):
        if jac.ndim == 1:
            parts.append(_diagonal_step(jac, err - jac * total, basis))
            break
        jn = jac - (jac @ basis) @ basis.T if basis.shape[1] else jac
        part = sr_inverse(jn, err - jac @ total, k_level)
        parts.append(part)
        total = total + part
        if level < last:
            basis = np.hstack([basis, row_basis(jn)])
    return parts


def _diagonal_step(w: np.ndarray, e: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """argmin ||W x - e|| over x with V^T x = 0 (V: ``basis``, orthonormal columns)."""
    target = e / w
    if not basis.shape[1]:
        return target
    inverse = 1.0 / w**2
    scaled = basis * inverse[:, None]  # W^-2 V
    return target - scaled @ np.linalg.solve(basis.T @ scaled, basis.T @ target)
