"""Recipes offline, exact outputs: deduplicate, throttle, session, with_ttl and
the rules table."""

from __future__ import annotations

from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax import recovery
from sparkwax.operators import (Rules, Throttled, collect, count_final, deduplicate,
                                rules_from, session, stateful_map, throttle, with_rules,
                                with_ttl)
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, run, run_bounded

from kit import T0, at_second as t

EVENT = sw.EventTime("ts")


def ev(seconds, n=None, **fields):
    return {"ts": t(seconds), "n": n, **fields}


def ns(values):
    return [v["n"] for v in values]


# -- deduplicate --------------------------------------------------------------------


def test_deduplicate_by_the_stream_key():
    script = [Batch([("id1", ev(0, 1)), ("id1", ev(5, 2)), ("id2", ev(3, 3))]),
              Crash(),
              Batch([("id1", ev(12, 4)), ("id1", ev(15, 5))]),
              Batch([("other", ev(20, 6))])]
    result = run(deduplicate(None, timedelta(seconds=10)), script, time=EVENT)
    assert {k: ns(v) for k, v in result.by_key.items()} == {"id1": [1, 4], "id2": [3],
                                                            "other": [6]}
    # watermark 20: id2 (seen at 3, timer at 13 rounded up to 20) is forgotten,
    # id1 (seen at 12) is still remembered
    assert result.snapshots == {"id1": ((0, t(12)),), "other": ((0, t(20)),)}


def test_deduplicate_by_a_field_within_each_key():
    items = [("ann", ev(0, 1, id="e1")), ("ann", ev(1, 2, id="e2")),
             ("ann", ev(2, 3, id="e1")), ("ann", ev(11, 4, id="e1")),
             ("ann", ev(20, 5, id="e2")), ("bob", ev(2, 6, id="e1"))]
    result = run_bounded(deduplicate("id", "10 seconds"), items, time=EVENT)
    assert {k: ns(v) for k, v in result.by_key.items()} == {"ann": [1, 2, 4, 5], "bob": [6]}


def test_deduplicate_forgets_ids_and_keys_after_ttl():
    runner = Runner(deduplicate(lambda v: v.get("id"), timedelta(seconds=10)), time=EVENT)
    runner.play(Batch([("k", ev(0, 1, id="a")), ("k", ev(4, 2, id="b"))]))
    runner.play(Batch([("clock", ev(11))]))     # watermark 4
    runner.play(Batch([("clock", ev(12))]))     # watermark 11: "a" (0 + 10) is forgotten
    assert runner.process_all_available().snapshots["k"] == (("b", t(4)),)
    runner.play(Batch([("clock", ev(30))]))     # watermark 12
    result = runner.process_all_available()                    # watermark 30: "b" too: the key goes
    assert "k" not in result.snapshots


def test_deduplicate_forgets_every_expired_id_at_once():
    runner = Runner(deduplicate("id", timedelta(seconds=10)),
                    time=sw.EventTime("ts", watermark="1 minute"))
    runner.play(Batch([("k", ev(0, 1, id="a")), ("k", ev(4, 2, id="b")),
                       ("k", ev(15, 3, id="c"))]))
    runner.play(Batch([("clock", ev(100, id="x"))]))   # watermark 0, then 40 s
    assert recovery.decode(runner.blobs["k"], step_id="stateful", key="k") == (
        ("a", t(0)), ("b", t(4)), ("c", t(15)))
    runner.play(Tick())     # k's timer (10 s) fires at 40 s: all three ids expired by then
    result = runner.process_all_available()
    assert "k" not in result.snapshots                  # forgotten in one activation
    assert result.activations == 3                      # k, clock, k
    assert ns(result.by_key["k"]) == [1, 2, 3]


def test_deduplicate_needs_a_ttl():
    with pytest.raises(sw.ConfigError, match="ttl"):
        deduplicate("id")


# -- throttle -------------------------------------------------------------------------

TIMES = [0, 1, 2, 9, 10, 11, 12, 25]


def test_throttle_drops_the_overflow():
    items = [("k", ev(s, s)) for s in TIMES]
    result = run_bounded(throttle(2, "10 seconds"), items, time=EVENT)
    assert ns(result.by_key["k"]) == [0, 1, 10, 11, 25]


def test_throttle_flags_the_overflow():
    items = [("k", ev(s, s)) for s in TIMES]
    result = run_bounded(throttle(2, timedelta(seconds=10), overflow="flag"), items,
                         time=EVENT)
    assert [(v.passed, v.value["n"]) for v in result.by_key["k"]] == [
        (True, 0), (True, 1), (False, 2), (False, 9), (True, 10), (True, 11), (False, 12),
        (True, 25)]
    assert result.by_key["k"][0] == Throttled(True, ev(0, 0))


def test_throttle_streaming_and_state_cleanup():
    script = [Batch([("k", ev(s, s)) for s in TIMES[:4]]), Crash(),
              Batch([("k", ev(s, s)) for s in TIMES[4:]]),
              Batch([("other", ev(100))]),
              Batch([("other", ev(101))])]
    result = run(throttle(2, "10 seconds"), script, time=EVENT)
    assert ns(result.by_key["k"]) == [0, 1, 10, 11, 25]
    assert ns(result.by_key["other"]) == [None, None]
    assert list(result.snapshots) == ["other"]    # k's passes all expired


def test_throttle_validation():
    with pytest.raises(sw.ConfigError):
        throttle(0, "1 second")
    with pytest.raises(sw.ConfigError):
        throttle(1, "1 second", overflow="queue")


# -- session --------------------------------------------------------------------------


def test_session_summaries():
    gap = timedelta(minutes=10)
    items = [("a", ev(0)), ("a", ev(300)), ("a", ev(1800)), ("b", ev(120))]
    result = run_bounded(session(gap), items, time=EVENT)
    assert result.by_key == {"a": [{"start": t(0), "end": t(300), "events": 2},
                                   {"start": t(1800), "end": t(1800), "events": 1}],
                             "b": [{"start": t(120), "end": t(120), "events": 1}]}


def test_session_custom_summary_out_of_order_merge_and_cleanup():
    def on_close(start, end, values):
        total = sum(v["n"] for v in values)
        return None if total == 0 else (start, end, total)

    op = session("10 minutes", on_close)
    script = [Batch([("a", ev(0, 1)), ("a", ev(900, 2)), ("z", ev(0, 0))]),
              Batch([("a", ev(420, 3))]),           # 7 min: joins both sessions of a
              Batch([("clock", ev(3000, 5))])]      # watermark 1200 s: z's session closes
    result = run(op, script, time=sw.EventTime("ts", watermark="30 minutes"))
    assert result.by_key == {}                      # a's merged session still open
    assert sorted(result.snapshots) == ["a", "clock"]
    done = run(op, script + [Batch([("clock", ev(4000, 5))])],   # watermark 2200 s
               time=sw.EventTime("ts", watermark="30 minutes"))
    assert done.by_key == {"a": [(t(0), t(900), 6)]}
    assert sorted(done.snapshots) == ["clock"]      # z emitted nothing and left no state


def test_session_closes_every_due_session_in_one_activation():
    script = [Batch([("a", ev(0)), ("a", ev(300)), ("a", ev(1800)), ("a", ev(3600))]),
              Batch([("clock", ev(9000))])]         # watermark 0 s, then 5400 s
    runner = Runner(session("10 minutes"), time=sw.EventTime("ts", watermark="1 hour"))
    for step in script:
        runner.play(step)
    assert runner.result.outputs == []
    runner.play(Tick())                             # one activation of a closes all three
    assert runner.result.by_key == {"a": [{"start": t(0), "end": t(300), "events": 2},
                                          {"start": t(1800), "end": t(1800), "events": 1},
                                          {"start": t(3600), "end": t(3600), "events": 1}]}
    assert runner.result.activations == 3
    assert sorted(runner.process_all_available().snapshots) == ["clock"]


# -- with_ttl -------------------------------------------------------------------------


def test_with_ttl_flushes_idle_keys():
    op = with_ttl(count_final(), timedelta(minutes=20), flush=True)
    script = [Batch([("a", ev(0)), ("b", ev(0))]),
              Batch([("a", ev(1800))]),  # a idle 30 min: old state flushed before this item
              Batch([("c", ev(3000))])]  # watermark 30 min: b flushed (timer)
    result = run(op, script, time=EVENT)
    # the trailing batch (watermark 50 min) flushes a (idle since 30 min)
    assert result.by_key == {"a": [1, 1], "b": [1]}
    assert list(result.snapshots) == ["c"]
    assert result.snapshots["c"] == (1, t(3000))


def test_with_ttl_drops_without_flush():
    op = with_ttl(count_final(), "20 minutes")
    script = [Batch([("a", ev(0)), ("b", ev(0))]), Batch([("a", ev(1800))]),
              Batch([("c", ev(3000))]), Eof()]
    result = run(op, script, time=EVENT)
    assert result.by_key == {"c": [1]}        # only c was alive at EOF
    assert result.live_keys == 0


def test_with_ttl_keeps_the_inner_timers():
    op = with_ttl(collect(timedelta(minutes=5), 10), timedelta(minutes=20))
    script = [Batch([("a", ev(0, 1)), ("a", ev(60, 2))]),
              Batch([("x", ev(420))]),        # watermark 60 s
              Batch([("x", ev(480))])]        # watermark 7 min: a's collect times out (6 min)
    result = run(op, script, time=EVENT)
    assert [ns(batch) for batch in result.by_key["a"]] == [[1, 2]]
    assert "a" not in result.snapshots       # the inner logic discarded: so did the wrapper


class Reminder(sw.StatefulLogic):
    """Counts values; emits one reminder 5 minutes after the first, the count at EOF."""

    def __init__(self, resume=None):
        self.first, self.count, self.reminded = resume or (None, 0, False)

    def on_item(self, value):
        self.first = self.first or value["ts"]
        self.count += 1
        return [], sw.RETAIN

    def notify_at(self):
        if self.reminded or self.first is None:
            return None
        return self.first + timedelta(minutes=5)

    def on_notify(self):
        self.reminded = True
        return [("reminder", self.count)], sw.RETAIN

    def on_eof(self):
        return [("count", self.count)], sw.DISCARD

    def snapshot(self):
        return (self.first, self.count, self.reminded)


def test_with_ttl_fires_the_inner_timer_and_expires_in_one_activation():
    script = [Batch([("a", ev(0)), ("a", ev(60))]),
              Batch([("clock", ev(3000))])]     # watermark 60 s, then 50 min
    runner = Runner(with_ttl(Reminder, "20 minutes", flush=True), time=EVENT)
    for step in script:
        runner.play(step)
    assert runner.result.outputs == []
    runner.play(Tick())          # inner timer (5 min) and expiry (21 min) both passed
    assert runner.result.by_key == {"a": [("reminder", 2), ("count", 2)]}
    assert runner.result.activations == 3
    assert sorted(runner.process_all_available().snapshots) == ["clock"]


def test_with_ttl_skips_the_inner_timer_when_the_key_expired_before_it():
    script = [Batch([("a", ev(0))]), Batch([("clock", ev(3000))])]
    result = run(with_ttl(Reminder, "2 minutes", flush=True), script, time=EVENT)
    assert result.by_key["a"] == [("count", 1)]   # expired at 2 min, before the 5 min timer
    assert sorted(result.snapshots) == ["clock"]


def test_with_ttl_on_bounded_input():
    items = [("a", ev(0, 1)), ("a", ev(100, 2)), ("a", ev(5000, 3)), ("a", ev(5001, 4))]
    result = run_bounded(with_ttl(count_final(), "1 hour", flush=True), items, time=EVENT)
    assert result.by_key == {"a": [2, 2]}


# -- rules --------------------------------------------------------------------------


def limit_logic(table, resume):
    """Running total per key; flags when it exceeds the key's limit in the table."""
    def step(total, value):
        total = (total or 0) + value
        return total, total > table.get("limit", 100)
    return stateful_map(step)(resume)


def test_with_rules_reads_a_fixed_table():
    op = with_rules(Rules({"limit": 3}), limit_logic)
    result = run(op, [Batch([("a", 2), ("b", 1)]), Crash(), Batch([("a", 2), ("b", 1)])])
    assert result.by_key == {"a": [False, True], "b": [False, False]}
    assert with_rules({"limit": 3}, limit_logic).rules.get() == {"limit": 3}


def test_with_rules_reloads_with_a_loader():
    tables = [{"limit": 100}]
    loads = []

    def loader():
        loads.append(1)
        return dict(tables[-1])

    op = with_rules(Rules(loader=loader, refresh="0 seconds"), limit_logic)
    runner = Runner(op)
    runner.play(Batch([("a", 5)]))
    tables.append({"limit": 6})                   # the table changes between batches
    runner.play(Batch([("a", 5)]))
    assert runner.process_all_available().by_key == {"a": [False, True]}
    cached = Rules(loader=loader)                  # no refresh: loaded once per process
    before = len(loads)
    assert cached.get() == cached.get() == {"limit": 6}
    assert len(loads) == before + 1


def test_rules_from_a_small_dataframe():
    class FakeRow(dict):
        def asDict(self, recursive=False):
            return dict(self)

    class FakeFrame:
        def collect(self):
            return [FakeRow(rule="r1", limit=3), FakeRow(rule="r2", limit=5)]

    assert rules_from(FakeFrame()).get() == [{"rule": "r1", "limit": 3},
                                             {"rule": "r2", "limit": 5}]
    assert rules_from(FakeFrame(), key="rule").get()["r2"] == {"rule": "r2", "limit": 5}
    assert rules_from(FakeFrame(), key=["rule", "limit"]).get()[("r1", 3)]["rule"] == "r1"


def test_rules_validation():
    with pytest.raises(sw.ConfigError):
        Rules({"a": 1}, loader=dict)
    with pytest.raises(sw.ConfigError):
        Rules({"a": 1}, refresh="1 minute")
