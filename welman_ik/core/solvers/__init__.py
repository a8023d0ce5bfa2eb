"""The solvers: each is ``solve(problem, q0) -> SolveResult``."""

from . import ccd, jacobian_transpose, quasi_newton, sr_inverse

SOLVERS = {
    "CCD": ccd.solve,
    "JACOBIAN_TRANSPOSE": jacobian_transpose.solve,
    "SR_INVERSE": sr_inverse.solve,
    "QUASI_NEWTON": quasi_newton.solve,
}

__all__ = ["SOLVERS"]
