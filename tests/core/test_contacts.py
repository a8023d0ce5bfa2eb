"""Contacts: plants found in sampled paths, held at their average, within the drift limit,
with a bent knee, heel and toe consistent, and eased at their ends."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from welman_ik.core import contacts


def step_cycle(frames: int = 120, period: int = 40, stance: int = 20, stride: float = 0.6, lift: float = 0.12):
    """A foot stepping forward along X: planted for ``stance`` frames of every ``period``,
    swinging forward by ``stride`` and up by ``lift`` in between."""
    path = np.zeros((frames, 3))
    for f in range(frames):
        cycle, phase = divmod(f, period)
        if phase < stance:
            path[f] = (cycle * stride, 0.0, 0.0)
        else:
            s = (phase - stance) / (period - stance)
            path[f] = ((cycle + 0.5 * (1 - math.cos(math.pi * s))) * stride, 0.0, lift * math.sin(math.pi * s))
    return path


def test_a_stepping_foot_plants_once_per_stance():
    ranges = contacts.planted_ranges(step_cycle(), height=0.03, speed=0.005, min_frames=5)
    assert len(ranges) == 3
    for (first, last), touchdown in zip(ranges, (0, 40, 80)):
        assert touchdown <= first <= touchdown + 1  # the landing frame's step in is still fast
        assert 18 <= last - first <= 20


def test_a_slow_creep_is_not_one_plant():
    """26 mm of creep at 0.26 mm per frame passes any per-frame speed test; the drift limit
    splits it into pieces that each stay within the limit, with a gap to ease across."""
    path = np.zeros((100, 3))
    path[:, 0] = np.linspace(0.0, 0.026, 100)
    assert contacts.planted_ranges(path, 0.03, 0.005, 5) == [(0, 99)]
    pieces = contacts.planted_ranges(path, 0.03, 0.005, 5, drift=0.015)
    assert len(pieces) == 2
    for first, last in pieces:
        segment = path[first:last + 1]
        extent = max(np.linalg.norm(a - b) for a, b in itertools.combinations(segment, 2))
        assert extent <= 0.015
    assert pieces[1][0] - pieces[0][1] == contacts.SPLIT_GAP + 1


def test_a_still_foot_is_one_plant_under_the_drift_limit():
    rng = np.random.default_rng(3)
    path = rng.normal(scale=0.001, size=(60, 3))
    assert contacts.planted_ranges(path, 0.03, 0.01, 5, drift=0.025) == [(0, 59)]


def test_a_plant_is_held_at_its_average():
    path = np.zeros((20, 3))
    path[:, 0] = np.linspace(0.0, 0.01, 20)  # a 10 mm slide
    (plant,) = contacts.held(path, [(0, 19)], 5)
    assert np.allclose(plant.point, [0.005, 0.0, 0.0])
    # the largest correction is half the slide, not all of it at the far end
    assert np.linalg.norm(path - plant.point, axis=1).max() == pytest.approx(0.005)


def test_frames_that_need_a_straight_knee_are_left_out():
    """The hips rise away from a planted heel: the frames where the held point is beyond
    the leg's reach with the knee bent 5 degrees are dropped (frames 35-39: frame 35 is
    0.2 mm too far), and the plant's point is averaged over the frames kept."""
    frames, upper, lower = 40, 0.45, 0.45
    heel = np.zeros((frames, 3))
    heel[:, 0] = np.linspace(0.0, 0.004, frames)
    hips = np.zeros((frames, 3))
    hips[:, 2] = np.linspace(0.85, 0.905, frames)  # the last frames are further than the leg reaches
    bend = math.radians(5.0)
    plants = contacts.held(heel, [(0, frames - 1)], 5, hips=hips, upper=upper,
                           lower=np.full(frames, lower), bend=bend)
    assert len(plants) == 1
    plant = plants[0]
    assert plant.first == 0 and plant.last == 34
    reach = contacts.bent_reach(upper, lower, bend)
    kept = np.linalg.norm(hips[:plant.last + 1] - plant.point, axis=1)
    assert kept.max() <= reach
    assert np.linalg.norm(hips[plant.last + 1] - plant.point) > reach
    assert np.allclose(plant.point, heel[:plant.last + 1].mean(axis=0))


def test_plants_cut_by_an_open_end_are_held_where_the_path_is_there():
    """A creeping point: a plant at the sampled range's first sample is held at that sample
    when the range is open there, one at the last sample at the last, one across both half
    way; a plant inside, and any plant at a closed end, keeps its average."""
    path = np.column_stack([np.linspace(0.0, 0.03, 30), np.zeros(30), np.zeros(30)])
    plants = [contacts.Plant(0, 9, path[0:10].mean(axis=0)), contacts.Plant(12, 17, path[12:18].mean(axis=0)),
              contacts.Plant(20, 29, path[20:30].mean(axis=0))]
    held = contacts.held_at_ends(path, plants, True, True)
    np.testing.assert_array_equal(held[0].point, path[0])
    np.testing.assert_array_equal(held[1].point, plants[1].point)
    np.testing.assert_array_equal(held[2].point, path[29])
    assert [(p.first, p.last) for p in held] == [(0, 9), (12, 17), (20, 29)]
    closed = contacts.held_at_ends(path, plants, False, False)
    assert all(np.array_equal(a.point, b.point) for a, b in zip(closed, plants, strict=True))
    (across,) = contacts.held_at_ends(path, [contacts.Plant(0, 29, path.mean(axis=0))], True, True)
    np.testing.assert_allclose(across.point, (path[0] + path[29]) / 2.0)


def test_bent_reach():
    assert contacts.bent_reach(0.4, 0.5, 0.0) == pytest.approx(0.9)
    assert contacts.bent_reach(0.4, 0.5, math.pi / 2) == pytest.approx(math.hypot(0.4, 0.5))


def test_toe_plants_agree_with_heel_plants():
    """Where the heel and toe of one bone are planted together, the toe's point is the
    bone's length from the heel's; the toe's frames under another heel plant are left out."""
    heel = [contacts.Plant(0, 30, np.array([0.0, 0.0, 0.0])), contacts.Plant(40, 70, np.array([0.5, 0.0, 0.0]))]
    toe = [contacts.Plant(10, 45, np.array([0.21, 0.01, 0.0]))]
    (paired,) = contacts.paired(heel, toe, 0.2, min_frames=5)
    assert np.linalg.norm(paired.point - heel[0].point) == pytest.approx(0.2)
    assert (paired.first, paired.last) == (10, 39)
    lone = [contacts.Plant(80, 90, np.array([1.0, 0.0, 0.0]))]
    assert contacts.paired(heel, lone, 0.2) == lone
    # a toe that lands before its heel is held from the heel's first frame on
    early = [contacts.Plant(36, 60, np.array([0.7, 0.0, 0.0]))]
    (late,) = contacts.paired(heel, early, 0.2, min_frames=5)
    assert (late.first, late.last) == (40, 60)


def test_ease_is_one_at_the_plant_and_none_past_the_falloff():
    weights = contacts.ease(np.arange(0, 13), 10)
    assert weights[0] == 1.0 and weights[11] == 0.0 and weights[12] == 0.0
    assert np.all(np.diff(weights[:12]) < 0)
    assert np.abs(np.diff(weights)).max() < 0.25  # no step takes more than a quarter of it


def test_the_floor_is_where_the_lowest_planted_point_typically_stands():
    """An ankle planted 8 cm up and a toe planted at 2 cm, dipping to 1 cm on a few frames and
    swinging high between plants: the floor is the toe's typical planted height, not the
    ankle's, nor its dip nor its swing; without plants, no floor."""
    ankle, toe = np.full(60, 0.08), np.full(60, 0.02)
    toe[12:15] = 0.01
    toe[30:40] = 0.3
    plants = [[contacts.Plant(0, 29, np.zeros(3))], [contacts.Plant(0, 29, np.zeros(3)), contacts.Plant(40, 59,
                                                                                                        np.zeros(3))]]
    assert contacts.floor_height([ankle, toe], plants) == pytest.approx(0.02)
    assert contacts.floor_height([ankle, toe], [[], []]) is None


def test_plants_below_the_floor_are_raised_and_a_toe_turned_about_its_heel():
    (up,) = contacts.raised([contacts.Plant(0, 9, np.array([0.3, 0.1, -0.01]))], 0.0)
    np.testing.assert_array_equal(up.point, [0.3, 0.1, 0.0])
    heel = [contacts.Plant(0, 30, np.array([0.0, 0.0, 0.08]))]
    toe = [contacts.Plant(10, 30, np.array([0.15, 0.0, -0.02]))]  # below the floor at z = 0
    (held,) = contacts.paired(heel, toe, 0.17, floor=0.0)
    assert held.point[2] == pytest.approx(0.0)
    assert np.linalg.norm(held.point - heel[0].point) == pytest.approx(0.17)  # the bone keeps its length
    assert held.point[1] == pytest.approx(0.0) and held.point[0] > 0.0  # the same way across
