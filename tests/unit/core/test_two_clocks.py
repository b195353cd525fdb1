"""Both timer kinds in one step (issue 22), offline: an EventTime step whose
logic has ``processing_notify_at`` beside ``notify_at``."""

from datetime import timedelta

import pytest
from hypothesis import given, settings, strategies as st

import sparkwax as sw
from sparkwax._driver import results, routes
from sparkwax._driver import Driver
from sparkwax.errors import NO_VALUE, CallbackError, ConfigError, NotifyAtError
from sparkwax.logic import DISCARD, RETAIN, StatefulLogic
from sparkwax.operators import Ttl, collect_window, with_max_wait, with_ttl
from sparkwax.operators import SessionWindower
from sparkwax.step import Step
from sparkwax.step_fields import uses_deadlines
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, run, run_bounded
from sparkwax.testing.reference import Counter, IdleAlarm
from sparkwax.testing.strategies import START, check_logic, timestamped_items
from sparkwax.testing.strategies.logic_check import LogicCheckFailed

from kit import MIN, NOON as T0, REPO, plain_keys
from test_driver_steps import NAIVE, Keeper, assert_error, driver, raised
from test_fast_path_cases import ms

TIME = sw.EventTime("ts")


class Both(StatefulLogic):
    """Records callbacks; values set the event timer (``notify``) and the
    deadline (``deadline``), and say what the next on_notify returns."""

    def __init__(self, resume=None):
        self.notify, self.deadline, self.notify_discard = resume or (None, None, False)

    def on_item(self, value):
        if "notify" in value:
            self.notify = value["notify"]
        if "deadline" in value:
            self.deadline = value["deadline"]
        self.notify_discard = value.get("notify_discard", False)
        return [("item", value["id"])], RETAIN

    def notify_at(self):
        return self.notify

    def on_notify(self):
        self.notify = None
        return [("notify", sw.now())], DISCARD if self.notify_discard else RETAIN

    def processing_notify_at(self):
        return self.deadline

    def on_processing_notify(self):
        self.deadline = None
        return [("deadline", sw.processing_now())], RETAIN

    def snapshot(self):
        return (self.notify, self.deadline, self.notify_discard)


class Stuck(Both):
    """Keeps a deadline that is always due (it never clears it)."""

    def on_processing_notify(self):
        return [("deadline", sw.processing_now())], RETAIN


def ev(i, ts, **more):
    return {"id": i, "ts": ts, **more}


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_event_timer_then_deadline_then_items(restore):
    script = [Batch([("k", ev(1, T0, notify=T0 + MIN, deadline=T0 + 5 * MIN))], now=T0),
              Batch([("k", ev(2, T0 + 2 * MIN))], now=T0 + 10 * MIN)]
    out = run(Both, script, time=TIME, restore=restore)
    # the watermark moved to 12:02 after batch 1: no; it moves after the batch
    # that carries 12:02, so batch 2's activation has watermark 12:00 and
    # only the deadline is due; the trailing no-data batch fires the timer.
    assert out.by_key["k"] == [("item", 1), ("deadline", T0 + 10 * MIN), ("item", 2),
                               ("notify", T0 + 2 * MIN)]
    assert out.metrics.timers_fired == 2
    assert out.metrics.processing_timers_fired == 1 and out.metrics.event_timers_fired == 1


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_both_due_in_one_activation_event_first(restore):
    script = [Batch([("k", ev(1, T0, notify=T0 + MIN, deadline=T0 + MIN))], now=T0),
              Batch([("j", ev(2, T0 + 2 * MIN))], now=T0),   # watermark -> 12:02 after it
              Batch([("k", ev(3, T0 + 3 * MIN))], now=T0 + 2 * MIN)]
    runner = Runner(Both, time=TIME, restore=restore, no_data_batches=False)
    out = runner.run(script)
    assert out.by_key["k"] == [("item", 1), ("notify", T0 + 2 * MIN),
                               ("deadline", T0 + 2 * MIN), ("item", 3)]
    assert [m.timers_fired for m in out.batch_metrics] == [0, 0, 2]
    assert [m.processing_timers_fired for m in out.batch_metrics] == [0, 0, 1]


def test_discard_in_on_notify_drops_the_deadline():
    script = [Batch([("k", ev(1, T0, notify=T0 + MIN, deadline=T0 + 3 * MIN,
                               notify_discard=True))], now=T0),
              Batch([("j", ev(2, T0 + 2 * MIN))], now=T0 + 2 * MIN),
              Tick(now=T0 + 3 * MIN)]
    out = run(Both, script, time=TIME)
    assert out.by_key["k"] == [("item", 1), ("notify", T0 + 2 * MIN)]
    assert "k" not in out.snapshots and out.metrics.processing_timers_fired == 0


def test_stalled_source_only_the_deadline_fires():
    script = [Batch([("k", ev(1, T0, notify=T0 + MIN, deadline=T0 + 5 * MIN))], now=T0),
              Tick(now=T0 + 4 * MIN), Tick(now=T0 + 5 * MIN), Tick(now=T0 + 60 * MIN)]
    out = run(Both, script, time=TIME)
    assert out.by_key["k"] == [("item", 1), ("deadline", T0 + 5 * MIN)]
    assert out.timers == {"k": T0 + MIN}      # the event timer waits for the watermark
    assert out.deadlines == {}


def test_a_still_due_deadline_fires_once_per_activation_never_in_a_loop():
    script = [Batch([("k", ev(1, T0, deadline=T0))], now=T0), Tick(now=T0 + MIN),
              Batch([("k", ev(2, T0 + MIN))], now=T0 + 2 * MIN)]
    out = run(Stuck, script, time=TIME)
    # once per activation: the Tick, batch 2 and the no-data batch after it
    # (the watermark moved); never twice in one
    assert out.by_key["k"] == [("item", 1), ("deadline", T0 + MIN),
                               ("deadline", T0 + 2 * MIN), ("item", 2),
                               ("deadline", T0 + 2 * MIN)]
    assert [m.processing_timers_fired for m in out.batch_metrics] == [0, 1, 1, 1]
    assert out.deadlines == {"k": T0}


def test_no_processing_clock_no_deadline_bounded_and_at_eof():
    items = [("k", ev(1, T0, deadline=T0 - MIN)), ("k", ev(2, T0 + MIN))]
    bounded = run_bounded(Both, items, time=TIME)
    assert bounded.by_key == {"k": [("item", 1), ("item", 2)]}
    assert bounded.metrics.processing_timers_fired == 0
    streamed = run(Both, [Batch(items[:1], now=T0 - 2 * MIN), Eof()], time=TIME)
    assert streamed.by_key == {"k": [("item", 1)]}    # Eof (finish) has no processing clock


def test_deadline_must_be_aware():
    naive = T0.replace(tzinfo=None)
    with pytest.raises(NotifyAtError) as info:
        run(Both, [Batch([("k", ev(1, T0, deadline=naive))], now=T0)], time=TIME)
    assert "processing_notify_at" in str(info.value) and "'k'" in str(info.value)


def test_processing_time_step_refuses_deadlines():
    with pytest.raises(ConfigError, match="processing_notify_at"):
        Step.of(Both)
    with pytest.raises(ConfigError, match="processing_notify_at"):
        run(Both, [Batch([("k", ev(1, T0))])])
    # a builder function: learnt from the first logic it builds
    with pytest.raises(ConfigError, match="processing_notify_at"):
        run(lambda resume: Both(resume), [Batch([("k", ev(1, T0))])])
    with pytest.raises(ConfigError, match="processing_notify_at"):
        Step.of(lambda resume: Both(resume)).knowing_deadlines()


def test_which_steps_have_two_clocks():
    assert Step.of(Both, time=TIME).two_clocks is True
    assert Step.of(Counter, time=TIME).two_clocks is False
    assert uses_deadlines(with_ttl(Both, "1 hour")) is True
    assert uses_deadlines(with_ttl(Counter, "1 hour")) is False
    assert Step.of(lambda r: Both(r), time=TIME).two_clocks is None
    assert Step.of(lambda r: Both(r), time=TIME).knowing_deadlines().two_clocks is True
    assert Driver(Step.of(Counter, time=TIME, ttl="1 hour")).two_clocks is False


def test_one_kind_steps_ignore_the_processing_clock():
    seen = []

    class Clock(StatefulLogic):
        def __init__(self, resume=None):
            pass

        def on_item(self, value):
            seen.append(sw.processing_now())
            return [], RETAIN

        def snapshot(self):
            return None

    run(Clock, [Batch([("k", ev(1, T0))], now=T0)], time=TIME)
    assert seen == [None]          # as on Spark: one clock, the watermark


@pytest.mark.parametrize("options", [{"ttl": "1 hour"}, {"max_state_bytes": 10_000},
                                     {"ttl": Ttl("1 hour"), "max_state_bytes": 10_000}])
def test_the_step_wrappers_forward_deadlines(options):
    script = [Batch([("k", ev(1, T0, deadline=T0 + MIN))], now=T0), Tick(now=T0 + MIN)]
    out = run(Both, script, time=TIME, **options)
    assert out.by_key["k"] == [("item", 1), ("deadline", T0 + MIN)]


def test_builder_function_learns_two_clocks_at_the_first_logic():
    script = [Batch([("k", ev(1, T0, deadline=T0 + MIN))], now=T0), Tick(now=T0 + MIN)]
    out = run(lambda resume: Both(resume), script, time=TIME)
    assert out.by_key["k"] == [("item", 1), ("deadline", T0 + MIN)]


def test_idle_alarm_fires_on_a_stall_and_windows_on_the_watermark():
    script = [Batch([("a", {"ts": T0, "idle_ms": 60_000}), ("b", {"ts": T0, "idle_ms": None})],
                    now=T0),
              Batch([("b", {"ts": T0 + 11 * MIN})], now=T0 + timedelta(seconds=30)),
              Crash(),
              Tick(now=T0 + 2 * MIN)]
    out = run(IdleAlarm, script, time=TIME)
    # b's value at 12:11 came while the watermark was 12:00: still in b's window
    assert out.by_key == {"a": [("window", 1), ("idle", 1)], "b": [("window", 2)]}
    assert out.metrics.processing_timers_fired == 1 and out.metrics.event_timers_fired == 2


def test_with_max_wait_flushes_an_open_session_when_the_source_stalls():
    op = with_max_wait(collect_window(SessionWindower(gap=timedelta(minutes=30)),
                                      ordered=False), "1 hour")
    script = [Batch([("u", {"ts": T0, "n": 1}), ("u", {"ts": T0 + MIN, "n": 2})], now=T0),
              Tick(now=T0 + 59 * MIN),
              Tick(now=T0 + 61 * MIN)]                  # no data: the watermark stays at 0
    out = run(op, script, time=TIME)
    [window] = out.by_key["u"]
    assert [v["n"] for v in window.value] == [1, 2] and "u" not in out.snapshots
    # with data flowing, the session closes on the watermark as without max_wait
    flowing = [Batch([("u", {"ts": T0, "n": 1})], now=T0),
               Batch([("v", {"ts": T0 + 40 * MIN, "n": 9})], now=T0 + MIN), Eof()]
    plain = run(collect_window(SessionWindower(gap=timedelta(minutes=30)), ordered=False),
                flowing, time=TIME)
    assert run(op, flowing, time=TIME).by_key == plain.by_key


def test_check_logic_covers_mixed_logics():
    items = timestamped_items(values=st.sampled_from([None, 1_000, 60_000]))
    check_logic(IdleAlarm, items=items.map(lambda rows: [
        (k, {"ts": v["ts"], "idle_ms": v["value"]}) for k, v in rows]),
        time=TIME, max_examples=60)


class DeadlineOutsideSnapshot(IdleAlarm):
    """A broken logic: its deadline is not in the snapshot."""

    def snapshot(self):
        return (self.count, self.total, self.window_end, None, self.discard)


def test_check_logic_catches_a_deadline_kept_outside_the_snapshot():
    items = timestamped_items(values=st.just(1_000)).map(lambda rows: [
        (k, {"ts": v["ts"], "idle_ms": v["value"]}) for k, v in rows])
    with pytest.raises(LogicCheckFailed):
        check_logic(DeadlineOutsideSnapshot, items=items, time=TIME, max_examples=200)


@settings(max_examples=80, deadline=None, database=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 30), st.integers(0, 30)),
                min_size=1, max_size=12))
def test_deadlines_fire_exactly_when_the_processing_clock_passes_them(rows):
    """Property: a key's alarm fires at the first batch whose processing
    time is at or past (its last value's processing time + idle), unless a
    newer value re-armed it first; event windows do not interfere."""
    script, expected, clock = [], {}, T0
    pending = {}
    for event_min, (key, step_s, idle_s) in enumerate(rows, 1):  # never late
        clock += timedelta(seconds=step_s)
        fired = sorted(k for k, deadline in pending.items() if deadline <= clock and k != key)
        fired += [key] if key in pending and pending[key] <= clock else []
        for k in fired:
            expected[k] = expected.get(k, 0) + 1
            del pending[k]
        script.append(Batch([(key, {"ts": T0 + event_min * MIN, "idle_ms": idle_s * 1000})],
                            now=clock))
        pending[key] = clock + timedelta(seconds=idle_s)
    clock += timedelta(hours=1)
    script.append(Tick(now=clock))
    for k in pending:
        expected[k] = expected.get(k, 0) + 1
    out = run(IdleAlarm, script, time=TIME, restore="always")
    fired = {k: sum(1 for v in vs if v[0] == "idle") for k, vs in out.by_key.items()}
    assert {k: n for k, n in fired.items() if n} == expected


def test_the_fraud_example_offline():
    import importlib.util

    path = REPO / "examples" / "fraud_alarm.py"
    spec = importlib.util.spec_from_file_location("fraud_alarm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.offline() == {"card-1": [("burst", 1300), ("idle-after-burst", 0)]}


class BatchAlarm(sw.StatefulBatchLogic):
    """A StatefulBatchLogic with a deadline: one alarm a minute after each batch."""

    def __init__(self, resume=None):
        self.n, self.deadline = resume or (0, None)

    def on_batch(self, values):
        self.n += len(values)
        self.deadline = sw.processing_now() + MIN
        return [("batch", self.n)], RETAIN

    def processing_notify_at(self):
        return self.deadline

    def on_processing_notify(self):
        self.deadline = None
        return [("alarm", self.n)], RETAIN

    def snapshot(self):
        return (self.n, self.deadline)


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_batch_logics_have_deadlines_too(restore):
    script = [Batch([("k", ev(1, T0)), ("k", ev(2, T0))], now=T0),
              Batch([("k", ev(3, T0 + MIN))], now=T0 + 2 * MIN), Tick(now=T0 + 4 * MIN)]
    out = run(BatchAlarm, script, time=TIME, batch=True, restore=restore)
    assert out.by_key["k"] == [("batch", 2), ("alarm", 2), ("batch", 3), ("alarm", 3)]


class Deadlined(Keeper):
    """``Keeper`` with a processing deadline: ``deadline``, or ``bad``
    "deadline" to raise; its ``on_eof`` emits ``("eof",)``."""

    def processing_notify_at(self):
        if self.state.get("bad") == "deadline":
            raise ValueError("no deadline")
        return self.state.get("deadline")

    def on_processing_notify(self):
        self.state.pop("deadline")
        return [("deadline", sw.processing_now())], RETAIN

    def on_eof(self):
        return [("eof",)], RETAIN


def test_a_processing_deadline_that_raises_or_is_naive():
    step = driver(Deadlined, time=TIME)
    error = raised(step.activate, "k", None, [{"bad": "deadline"}], 0, processing_ms=0)
    assert_error(error, CallbackError, "s", "k", "processing_notify_at", NO_VALUE,
                 "processing_notify_at() raised ValueError('no deadline')")
    error = raised(step.activate, "k", None, [{"deadline": NAIVE}], 0, processing_ms=0)
    assert_error(error, NotifyAtError, "s", "k", "processing_notify_at", NAIVE,
                 "processing_notify_at() must return None or an aware datetime: naive "
                 "datetime; use an aware one, e.g. tzinfo=timezone.utc")


def test_metrics_carry_the_callback_time_and_the_deadlines_fired(monkeypatch):
    ticks = iter([0, 2_000_000])  # ns: the activation took 2 ms
    for module in (routes, results):  # the start and the end of activate_keys
        monkeypatch.setattr(module, "perf_counter_ns", lambda: next(ticks))
    act = driver().activate("k", None, [{}], 0)
    assert act.callback_us == 2000 and act.metrics().callback_us == 2000
    ticks = iter([0, 3_000_000])
    acts = plain_keys(driver(), ["k"], [None], [[{}]], [NO_VALUE], 0)
    assert acts.metrics.callback_us == 3000
    ticks = iter([0, 4_000_000])  # the general route (EOF)
    assert driver().activate("k", None, [{}], 0, eof=True).callback_us == 4000
    monkeypatch.undo()
    step = driver(Deadlined, time=TIME)
    first = step.activate("k", None, [{"deadline": START}], 0, processing_ms=0)
    act = step.activate("k", first.state, [], 0, processing_ms=ms(1))
    assert act.emits == [("deadline", START + timedelta(minutes=1))]
    assert act.metrics().processing_timers_fired == 1 and act.metrics().timers_fired == 1


@pytest.mark.parametrize("live", [False, True])
def test_a_two_clock_activation_without_event_times_fires_its_deadline(live):
    # (the plain path has no deadlines: this one must take the general path),
    # and is not EOF unless told
    step = driver(Deadlined, time=TIME)

    def call(logic, stored, values, processing_ms):
        if live:
            return step.activate_live("k", logic, stored, values, 0,
                                      processing_ms=processing_ms)
        return step.activate("k", stored, values, 0, processing_ms=processing_ms), None

    first, logic = call(None, None, [{"deadline": START}], 0)
    assert first.emits == [{"deadline": START}] and first.deadline == ms(0)
    act, _ = call(logic, first.state, [], ms(1))
    assert act.emits == [("deadline", START + timedelta(minutes=1))]
    assert (act.deadline_fired, act.deadline) == (1, None)
