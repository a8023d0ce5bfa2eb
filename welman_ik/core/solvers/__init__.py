"""The solvers: each is ``solve(problem, q0) -> SolveResult``."""

from . import ccd, jacobian_transpose, sr_inverse

SOLVERS = {
    "CCD": ccd.solve,
    "JACOBIAN_TRANSPOSE": jacobian_transpose.solve,
    "SR_INVERSE": sr_inverse.solve,
}

__all__ = ["SOLVERS"]
