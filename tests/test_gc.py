"""gc_paused: a big build is counted as old at once, and its garbage cycles are still freed."""

from __future__ import annotations

import gc
import weakref

from nsdl_jupyter._gc import gc_paused


class _Node:
    def __init__(self) -> None:
        self.partner: _Node | None = None


def test_what_a_paused_block_built_is_old_at_once() -> None:
    """Left young, the build's objects would be walked by the next young, middle and full
    passes right after the block (seconds at 100,000 nodes)."""
    with gc_paused():
        built = [_Node() for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(node) in oldest for node in built)
    assert not any(id(node) in oldest for node in [_Node()])  # a new object starts young


def test_garbage_cycles_made_in_a_paused_block_are_still_collected() -> None:
    with gc_paused():
        a, b = _Node(), _Node()
        a.partner, b.partner = b, a
        gone = weakref.ref(a)
        del a, b
    gc.collect()
    assert gone() is None


def test_a_callers_frozen_objects_stay_frozen() -> None:
    kept = _Node()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            _ = [_Node() for _ in range(10)]
        # still frozen, and nothing the block built joined them; the count may only fall, as
        # other threads of the test process free frozen objects meanwhile
        assert 0 < gc.get_freeze_count() <= frozen
        assert id(kept) not in {id(o) for o in gc.get_objects(generation=2)}
    finally:
        gc.unfreeze()


def test_a_nested_pause_leaves_the_collector_off_until_the_outer_one_ends() -> None:
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
