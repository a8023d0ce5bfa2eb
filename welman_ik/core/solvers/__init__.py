"""The solvers: each is ``solve(problem, q0) -> SolveResult``, run with one BLAS thread
(``threads.single_threaded``), the limbs before the trunk and the gaze kept when the problem
names them (``limbs_first``)."""

from ..threads import single_threaded
from . import ccd, jacobian_transpose, quasi_newton, sr_inverse
from .limbs_first import limbs_first

# The chunk of iterations of a limbs-first stage that may not be the last (it goes on while each
# chunk cuts the error by a fifth): about what each solver takes for a stride of a drag (SR
# inverse 3-6, quasi-Newton 10-60, CCD 5-20 sweeps, the transpose 20-70 on the metarig), so
# that a limb its ranges block hands over soon.
STAGE_ITERATIONS = {"CCD": 20, "JACOBIAN_TRANSPOSE": 40, "SR_INVERSE": 10, "QUASI_NEWTON": 30}

SOLVERS = {name: single_threaded(limbs_first(module.solve, STAGE_ITERATIONS[name])) for name, module in (
    ("CCD", ccd), ("JACOBIAN_TRANSPOSE", jacobian_transpose), ("SR_INVERSE", sr_inverse),
    ("QUASI_NEWTON", quasi_newton))}

__all__ = ["SOLVERS"]
