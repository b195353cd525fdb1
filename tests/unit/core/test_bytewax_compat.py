"""Bytewax ``StatefulLogic`` subclasses (no timers) run unchanged: the same
per-key outputs from bytewax 0.21.1's own ``run_main`` and from sparkwax."""

from __future__ import annotations

import functools
import random

import pytest

bytewax_operators = pytest.importorskip("bytewax.operators")
from bytewax.dataflow import Dataflow  # noqa: E402
from bytewax.testing import TestingSink, TestingSource, run_main  # noqa: E402

from sparkwax.logic import overrides_notify_at  # noqa: E402
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded  # noqa: E402

BwLogic = bytewax_operators.StatefulLogic


class RunningSum(BwLogic):
    def __init__(self, resume):
        self.total = resume or 0

    def on_item(self, value):
        self.total += value
        return [self.total], BwLogic.RETAIN

    def snapshot(self):
        return self.total


class CollectThree(BwLogic):
    """Collect until 3 values, then emit them and DISCARD."""

    def __init__(self, resume):
        self.values = list(resume or [])

    def on_item(self, value):
        self.values.append(value)
        if len(self.values) == 3:
            return [tuple(self.values)], BwLogic.DISCARD
        return [], BwLogic.RETAIN

    def snapshot(self):
        return list(self.values)


class CollectThreeFlushOnEof(CollectThree):
    def on_eof(self):
        return [("partial", tuple(self.values))], BwLogic.DISCARD


class TotalOnEof(BwLogic):
    """Emits only at EOF (a tuple: bytewax's on_eof needs a sequence)."""

    def __init__(self, resume):
        self.count, self.total = resume or (0, 0)

    def on_item(self, value):
        self.count += 1
        self.total += value
        return (), BwLogic.RETAIN

    def on_eof(self):
        return (("eof", self.count, self.total),), BwLogic.RETAIN

    def snapshot(self):
        return (self.count, self.total)


class ResetOnNegative(BwLogic):
    """Emits each new distinct value (as a generator: bytewax's on_item accepts
    any iterable); a negative value emits a reset marker and DISCARDs the key."""

    def __init__(self, resume):
        self.seen = set(resume or ())

    def on_item(self, value):
        if value < 0:
            return [("reset", len(self.seen))], BwLogic.DISCARD
        if value in self.seen:
            return [], BwLogic.RETAIN
        self.seen.add(value)
        return (v for v in [value]), BwLogic.RETAIN

    def on_eof(self):
        return [("eof", tuple(sorted(self.seen)))], BwLogic.RETAIN

    def snapshot(self):
        return sorted(self.seen)


LOGICS = [RunningSum, CollectThree, CollectThreeFlushOnEof, TotalOnEof, ResetOnNegative]
SEEDS = [1, 2]


def make_items(seed, n=40):
    rng = random.Random(seed)
    return [(rng.choice("abcd"), rng.randint(-2, 9)) for _ in range(n)]


@functools.lru_cache(maxsize=None)
def bytewax_outputs(logic, seed):
    out = []
    flow = Dataflow(f"compat_{logic.__name__}_{seed}")
    stream = bytewax_operators.input("inp", flow, TestingSource(make_items(seed), batch_size=1))
    stateful = bytewax_operators.stateful("s", stream, logic)
    bytewax_operators.output("out", stateful, TestingSink(out))
    run_main(flow)
    return per_key(out)


def per_key(pairs):
    grouped = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("logic", LOGICS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_same_outputs_one_item_per_batch(logic, seed, restore):
    items = make_items(seed)
    script = [Batch([pair]) for pair in items] + [Eof()]
    result = run(logic, script, restore=restore)
    assert result.by_key == bytewax_outputs(logic, seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("logic", LOGICS, ids=lambda c: c.__name__)
def test_same_outputs_other_batchings(logic, seed):
    items = make_items(seed)
    expected = bytewax_outputs(logic, seed)
    assert run(logic, [Batch(items), Eof()]).by_key == expected
    chunks = [Batch(items[i:i + 7]) for i in range(0, len(items), 7)]
    crashy = [step for chunk in chunks for step in (chunk, Crash())] + [Eof()]
    assert run(logic, crashy, restore="on_crash").by_key == expected
    assert run_bounded(logic, items).by_key == expected


def test_expected_outputs_are_not_trivial():
    """Guard: the compared outputs exercise emits, discards and on_eof."""
    sums = bytewax_outputs(RunningSum, 1)
    assert sum(len(v) for v in sums.values()) == len(make_items(1))
    collected = bytewax_outputs(CollectThreeFlushOnEof, 1)
    assert any(len(v) > 1 for v in collected.values())
    assert any(v[-1][0] == "partial" for v in collected.values())
    resets = bytewax_outputs(ResetOnNegative, 1)
    assert any(isinstance(x, tuple) and x[0] == "reset" for v in resets.values() for x in v)
    assert bytewax_outputs(TotalOnEof, 2) == {
        k: [("eof", len(vs), sum(vs))] for k, vs in per_key(make_items(2)).items()}


def test_bytewax_logic_without_notify_at_is_detected():
    assert not overrides_notify_at(RunningSum)
    assert not overrides_notify_at(CollectThreeFlushOnEof)

    class WithTimer(RunningSum):
        def notify_at(self):
            return None

    assert overrides_notify_at(WithTimer)
    assert overrides_notify_at(type("Sub", (WithTimer,), {}))
