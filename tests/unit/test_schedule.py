"""The annotation queue's tiers, in-process."""

from __future__ import annotations

from filescout.engine.queue import BACKGROUND, NEIGHBOUR, TOUCHED, AnnotationQueue


def test_touched_first_newest_first_then_neighbours_then_backlog() -> None:
    queue = AnnotationQueue()
    queue.extend(["b1", "b2", "n1"], BACKGROUND)
    queue.push("n1", NEIGHBOUR)
    queue.push("t1", TOUCHED)
    queue.push("t2", TOUCHED)
    assert len(queue) == 5
    assert queue.pop(10) == ["t2", "t1", "n1", "b1", "b2"]
    assert len(queue) == 0


def test_a_lower_tier_never_demotes_and_a_touch_moves_to_the_front() -> None:
    queue = AnnotationQueue()
    queue.push("a", TOUCHED)
    queue.push("b", TOUCHED)
    queue.push("a", BACKGROUND)  # no demotion
    queue.push("a", TOUCHED)  # touched again: newest first
    assert queue.pop(1) == ["a"]
    assert queue.pop(5) == ["b"]


def test_clearing_the_backlog_keeps_touched_files() -> None:
    queue = AnnotationQueue()
    queue.extend(["x", "y"], BACKGROUND)
    queue.push("t", TOUCHED)
    queue.push("n", NEIGHBOUR)
    queue.clear_background()
    assert queue.pop(10) == ["t", "n"]


def test_pop_can_stop_at_a_tier_and_the_head_tier_skips_superseded_entries() -> None:
    queue = AnnotationQueue()
    assert queue.head_tier() is None
    queue.extend(["b1", "b2"], BACKGROUND)
    queue.push("n1", NEIGHBOUR)
    assert queue.head_tier() == NEIGHBOUR
    queue.push("t1", TOUCHED)
    queue.push("b1", TOUCHED)  # moved up: its backlog entry is superseded
    assert queue.head_tier() == TOUCHED
    assert queue.pop(10, tier_at_most=TOUCHED) == ["b1", "t1"]
    assert queue.head_tier() == NEIGHBOUR
    assert queue.pop(10, tier_at_most=TOUCHED) == []
    assert queue.pop(10) == ["n1", "b2"]
    assert queue.head_tier() is None


def test_the_backlog_keeps_its_order_and_holds_each_path_once() -> None:
    queue = AnnotationQueue()
    queue.extend(["a", "b", "a", "c"], BACKGROUND)
    assert len(queue) == 3
    queue.push("b", NEIGHBOUR)  # moved up: its backlog entry is superseded
    assert queue.pop(1) == ["b"]
    queue.push("b", BACKGROUND)  # queued again after it was taken: comes out once more, once
    assert len(queue) == 3
    assert queue.pop(10) == ["a", "b", "c"]
    assert len(queue) == 0 and queue.head_tier() is None
