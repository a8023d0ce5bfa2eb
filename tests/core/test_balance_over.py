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
