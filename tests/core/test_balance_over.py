"""The balance goal's quick test that the centre of mass is over its support polygon (in
floats, asked at every evaluation) answers as ``nearest_in_polygon`` does, with and without
a margin, on polygons of three to seven corners."""

import numpy as np

from welman_ik.core.goals.balance import BalanceGoal, nearest_in_polygon


def test_over_the_polygon_as_the_nearest_point_says():
    rng = np.random.default_rng(7)
    inside = 0
    for _ in range(2000):
        support = rng.normal(size=(int(rng.integers(3, 8)), 3))
        goal = BalanceGoal(np.arange(3), rng.normal(size=(3, 3)), [1.0, 2.0, 1.0], support=support,
                           margin=float(rng.choice([0.0, 0.05])))
        x = rng.normal(size=2) * 0.8
        nearest, normal = nearest_in_polygon(goal.polygon, x)
        over = len(goal.polygon) >= 3 and normal is None and np.array_equal(nearest, x)
        assert goal._over(x) == over
        inside += over
    assert 200 < inside < 1800  # (both answers are asked about)


def test_the_same_support_is_shaped_once_and_shared_read_only():
    """A drag's feet are the same call after call: goals on the same support points share its
    hull and polygon (worked out once, read-only), goals on other points or with another
    margin or vertical get their own, and every one is as a goal worked out afresh."""
    from welman_ik.core.goals import balance

    rng = np.random.default_rng(3)
    support = rng.normal(size=(6, 3))
    first = BalanceGoal(np.arange(3), rng.normal(size=(3, 3)), [1.0, 2.0, 1.0], support=support, margin=0.02)
    again = BalanceGoal(np.arange(2), rng.normal(size=(2, 3)), [1.0, 1.0], support=support.copy(), margin=0.02)
    assert again.polygon is first.polygon and again.hull is first.hull
    assert not first.polygon.flags.writeable and not first.hull.flags.writeable and not first.basis.flags.writeable
    for other in (BalanceGoal([0], np.zeros((1, 3)), [1.0], support=support + 0.01, margin=0.02),
                  BalanceGoal([0], np.zeros((1, 3)), [1.0], support=support, margin=0.03),
                  BalanceGoal([0], np.zeros((1, 3)), [1.0], support=support, margin=0.02, direction=(0.0, 1.0, 0.0))):
        assert other.polygon is not first.polygon
    balance._SHAPES.clear()
    fresh = BalanceGoal(np.arange(3), first.locals, [1.0, 2.0, 1.0], support=support, margin=0.02)
    assert fresh.polygon is not first.polygon
    assert np.array_equal(fresh.polygon, first.polygon) and np.array_equal(fresh.hull, first.hull)
    assert fresh._edges == first._edges and fresh.height == first.height
