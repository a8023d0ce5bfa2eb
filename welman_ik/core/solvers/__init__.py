"""The solvers: each is ``solve(problem, q0) -> SolveResult``, run with one BLAS thread
(``threads.single_threaded``)."""

from ..threads import single_threaded
from . import ccd, jacobian_transpose, quasi_newton, sr_inverse

SOLVERS = {
    "CCD": single_threaded(ccd.solve),
    "JACOBIAN_TRANSPOSE": single_threaded(jacobian_transpose.solve),
    "SR_INVERSE": single_threaded(sr_inverse.solve),
    "QUASI_NEWTON": single_threaded(quasi_newton.solve),
}

__all__ = ["SOLVERS"]
