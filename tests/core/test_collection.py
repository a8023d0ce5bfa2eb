"""The collector held off during a bulk job, and as it was after."""

from __future__ import annotations

import gc

import pytest

from welman_ik.core.collection import collection_paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_an_error():
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("a failed bake")
    assert gc.isenabled()


def test_a_nested_pause_leaves_it_off_until_the_outer_one_ends():
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
