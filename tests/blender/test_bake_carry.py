"""What a run of frames solved together carries on itself (``Continuity.ahead``) is what the
frame by frame solve carries onto each of its frames (``Continuity.carry``), frame after frame,
where each frame's solution leaves the carried joints as carried: the joints that move a goal
keep the last correction, scaled as the range weights fall; the joints whose pin ended ease
it off."""

import numpy as np
import pytest

from welman_ik.blender.bake.carry import Continuity

JOINTS = 12
LAYOUT = ("the tree",)
FALLOFF = 4


def solved_from(continuity: Continuity, q0: np.ndarray, moving: np.ndarray, share: float, rng=None) -> np.ndarray:
    """One frame in order: its carried start, solved (``rng``: the moving joints moved a little
    further, as a solve would), handed on; returns its correction."""
    q_start, _ = continuity.carry(q0, LAYOUT, moving, share, FALLOFF, "SR_INVERSE")
    q = q_start if rng is None else q_start + np.where(moving, rng.normal(scale=0.05, size=q0.size), 0.0)
    continuity.solved(LAYOUT, q0, q, True)
    return q_start - q0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shares", [(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0), (1.0, 0.8, 0.6, 0.6, 0.9, 0.3, 0.0),
                                    (0.2, 0.5, 1.0, 1.0, 0.7, 0.7, 1.0)], ids=["full", "easing out", "easing in"])
def test_ahead_is_what_carry_carries_frame_by_frame(seed, shares):
    rng = np.random.default_rng(seed)
    before = np.zeros(JOINTS, dtype=bool)
    before[:9] = True  # two pins' chains...
    earlier = before.copy()
    earlier[9:] = True  # ... and one that ended a few frames before them
    continuity = Continuity()
    for moving in (earlier, earlier, earlier, before, before):
        solved_from(continuity, rng.normal(size=JOINTS), moving, 1.0, rng)
    now = before.copy()
    now[5:9] = False  # a pin ends: its chain eases off from here
    animated = rng.normal(size=(len(shares), JOINTS))
    q_start, _ = continuity.carry(animated[0], LAYOUT, now, shares[0], FALLOFF, "SR_INVERSE")
    ahead = continuity.ahead(np.array(shares))  # asked on the run's first frame, before it is solved
    assert ahead.shape == (len(shares), JOINTS)
    np.testing.assert_allclose(ahead[0], q_start - animated[0], rtol=0, atol=1e-12)
    eased = np.abs(ahead[:, 5:]).sum(axis=1)
    assert eased[0] > 0.0 and eased[FALLOFF + 1:].max(initial=0.0) == 0.0  # the released joints let go
    continuity.solved(LAYOUT, animated[0], q_start, True)
    for k in range(1, len(shares)):
        carried = solved_from(continuity, animated[k], now, shares[k])
        np.testing.assert_allclose(ahead[k], carried, rtol=0, atol=1e-12, err_msg=f"frame {k} of the run")


def test_ahead_without_a_frame_before_carries_nothing():
    continuity = Continuity()
    continuity.carry(np.zeros(JOINTS), LAYOUT, np.ones(JOINTS, dtype=bool), 1.0, FALLOFF, "SR_INVERSE")
    np.testing.assert_array_equal(continuity.ahead(np.ones(5)), np.zeros((5, JOINTS)))
