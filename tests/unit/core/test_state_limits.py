"""Step-level state limits offline: ``ttl=`` (event time, clock, flush options)
and ``max_state_bytes=`` / ``with_state_limit``, through the runners and
check_logic, as sparkwax.stateful applies them."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.logic import overrides_notify_at
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, check_logic, run, run_bounded
from sparkwax.testing.reference import BatchCounter, Counter, SessionTracker
from sparkwax.testing.strategies import timestamped_items

from kit import T0, at as t

EVENT = sw.EventTime("ts")


def ev(minutes, n=None):
    return {"ts": t(minutes), "n": n}


# -- ttl= on the step ---------------------------------------------------------------------


def test_step_ttl_in_event_time_reads_the_event_time_column():
    script = [Batch([("a", ev(0)), ("b", ev(0))]),
              Batch([("a", ev(20))]),
              Batch([("c", ev(45))])]            # watermark 20, then 45: b idle since 0
    result = run(Counter, script, time=EVENT, ttl="30 minutes")
    assert result.by_key == {"a": [1, 2], "b": [1], "c": [1]}
    assert sorted(result.snapshots) == ["a", "c"]            # b expired at 30 min
    assert result.snapshots["a"] == (2, t(20))               # (inner snapshot, last seen)
    assert result.timers["a"] == t(50)
    again = run(Counter, script + [Batch([("a", ev(50))])], time=EVENT, ttl="30 minutes")
    assert again.by_key["a"] == [1, 2, 1]                    # a expired at 50: starts over


def test_step_ttl_in_processing_time_uses_the_clock():
    script = [Batch([("a", 1), ("b", 1)], now=t(0)),
              Batch([("a", 1)], now=t(10)),
              Tick(now=t(35)),                     # b idle for 35 minutes: expired
              Batch([("a", 1), ("b", 1)], now=t(36))]
    result = run(Counter, script, ttl=ops.Ttl("30 minutes", flush=lambda count: [-count]))
    assert result.by_key == {"a": [1, 2, 3], "b": [1, -1, 1]}
    assert result.snapshots == {"a": (3, t(36)), "b": (1, t(36))}


def test_step_ttl_flush_runs_on_eof_of_the_inner_logic():
    items = [("a", ev(0)), ("a", ev(10)), ("a", ev(50)), ("a", ev(55))]
    result = run_bounded(ops.count_final(), items, time=EVENT,
                         ttl=ops.Ttl("30 minutes", flush=True))
    assert result.by_key == {"a": [2, 2]}          # expired (flushed) once, then at EOF
    plain = run_bounded(ops.count_final(), items, time=EVENT, ttl="30 minutes")
    assert plain.by_key == {"a": [2]}              # without flush the first count is lost


def test_step_ttl_keeps_the_logics_own_timers():
    script = [Batch([("a", {"ts": t(0)}), ("a", {"ts": t(10)})]),
              Batch([("z", {"ts": t(100)})])]
    result = run(SessionTracker, script, time=EVENT, ttl="2 hours")
    # the session closes by its own timer (30 minutes after 10), before the ttl
    assert result.by_key["a"] == [{"start": t(0), "end": t(10), "events": 2}]
    assert sorted(result.snapshots) == ["z"]


def test_step_ttl_with_a_field_of_the_values():
    spec = ops.Ttl("5 minutes", ts=lambda v: v["seen"])
    items = [("k", {"seen": t(0)}), ("k", {"seen": t(3)}), ("k", {"seen": t(9)})]
    result = run(Counter, [Batch(items)], ttl=spec)
    assert result.by_key == {"k": [1, 2, 1]}


def test_step_ttl_errors():
    with pytest.raises(sw.ConfigError, match="StatefulBatchLogic"):
        run(BatchCounter, [Batch([("k", 1)])], batch=True, ttl="1 minute")
    with pytest.raises(sw.ConfigError, match="drop value="):
        Step.of(Counter, ttl="1 minute", time=EVENT, value="amount", step_id="s")
    with pytest.raises(sw.ConfigError, match="ttl"):
        run(Counter, [Batch([("k", 1)])], ttl="soon")
    with pytest.raises(sw.ConfigError, match="flush"):
        ops.with_ttl(Counter, "1 minute", flush="yes")


def test_a_step_without_options_builds_with_the_users_builder():
    assert Step.of(Counter, time=EVENT).logic_builder() is Counter


def test_with_ttl_on_the_clock_without_a_clock_never_expires():
    items = [("a", 1), ("a", 2)]
    result = run_bounded(ops.with_ttl(ops.count_final(), "1 minute", ts=None), items)
    assert result.by_key == {"a": [2]}


# -- max_state_bytes= / with_state_limit ------------------------------------------------------


def growing():
    return ops.fold(list, lambda acc, v: acc + [v])


def words(count, key="k"):
    return [(key, letter * 50) for letter in "abcdefgh"[:count]]


def test_max_state_bytes_fails_with_the_step_key_and_sizes():
    assert run(growing(), [Batch(words(3))], max_state_bytes=200).live_keys == 1
    with pytest.raises(sw.CallbackError) as caught:
        run(growing(), [Batch(words(3)), Batch(words(1, key="j")), Batch(words(1))],
            max_state_bytes=200, step_id="collector")
    error = caught.value
    assert (error.step_id, error.key, error.callback) == ("collector", "k", "snapshot")
    assert isinstance(error.__cause__, ops.StateTooLarge)
    assert (error.__cause__.size, error.__cause__.max_bytes) == (235, 200)
    assert "over max_bytes=200" in str(error)


def test_the_limit_leaves_the_snapshot_and_the_timers_alone():
    limited = ops.with_state_limit(Counter, 1000)
    assert run(limited, [Batch([("k", 1)] * 3)]).snapshots == {"k": 3}
    assert not overrides_notify_at(type(limited(None)))       # Spark keeps NoTimeout
    timed = ops.with_state_limit(SessionTracker, 1000)
    assert overrides_notify_at(type(timed(None)))
    script = [Batch([("a", {"ts": t(0)})]), Batch([("z", {"ts": t(100)})])]
    assert run(timed, script, time=EVENT).by_key["a"] == [
        {"start": t(0), "end": t(0), "events": 1}]
    assert ops.with_state_limit(Counter, 10).__qualname__ == "with_state_limit(Counter)"


def test_the_limit_wraps_batch_logics():
    result = run(BatchCounter, [Batch([("k", 1)] * 3), Crash(), Batch([("k", 1)])],
                 batch=True, max_state_bytes=100)
    assert result.by_key == {"k": [3, 4]}


def test_ttl_and_limit_together():
    result = run(Counter, [Batch([("k", ev(0))]), Batch([("k", ev(40))])], time=EVENT,
                 ttl="30 minutes", max_state_bytes=500)
    assert result.by_key == {"k": [1, 1]}
    with pytest.raises(sw.CallbackError, match="StateTooLarge"):
        run(Counter, [Batch([("k", ev(0))])], time=EVENT, ttl="30 minutes", max_state_bytes=20)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1 MB"])
def test_max_state_bytes_must_be_a_positive_int(bad):
    with pytest.raises(sw.ConfigError, match="positive int"):
        ops.with_state_limit(Counter, bad)


# -- check_logic with the step options ------------------------------------------------------

ITEMS = timestamped_items(keys=st.sampled_from(["a", "b"]), max_size=20)
TIME = sw.EventTime("ts", watermark="2 minutes")


@pytest.mark.parametrize("ttl", ["4 minutes", ops.Ttl("4 minutes", flush=True),
                                 ops.Ttl("3 minutes", flush=lambda snapshot: [snapshot])])
def test_check_logic_with_ttl(ttl):
    check_logic(ops.fold(list, lambda acc, v: acc + [v["value"]]), time=TIME, items=ITEMS,
                ttl=ttl, max_state_bytes=100_000, max_examples=50)


def test_check_logic_with_a_clock_ttl():
    check_logic(Counter, ttl="20 minutes", max_examples=50)
