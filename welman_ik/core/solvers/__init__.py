"""The solvers: each is ``solve(problem, q0) -> SolveResult``, run with one BLAS thread
(``threads.single_threaded``), the limbs before the trunk and the gaze kept when the problem
names them (``limbs_first``)."""

from ..threads import single_threaded
from . import ccd, jacobian_transpose, quasi_newton, sr_inverse
from .limbs_first import limbs_first

SOLVERS = {
    "CCD": single_threaded(limbs_first(ccd.solve)),
    "JACOBIAN_TRANSPOSE": single_threaded(limbs_first(jacobian_transpose.solve)),
    "SR_INVERSE": single_threaded(limbs_first(sr_inverse.solve)),
    "QUASI_NEWTON": single_threaded(limbs_first(quasi_newton.solve)),
}

__all__ = ["SOLVERS"]
