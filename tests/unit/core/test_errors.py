"""Validation errors: class, attributes, message (step id, key, callback,
offending value), chaining of the user's exception, and pickling."""

from __future__ import annotations

import pickle
import threading
from datetime import date, datetime, timedelta, timezone

import pytest

import sparkwax
from sparkwax import (RETAIN, BuilderError, CallbackError, CheckpointError, ConfigError, EventTime, InputError, SchemaError,
                      LogicError, NotifyAtError, ReturnValueError, SnapshotError, SparkwaxError,
                      StatefulLogic)
from sparkwax._driver import Driver
from sparkwax.errors import NO_VALUE, ReturnValueError
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Eof, Tick, run, run_bounded
from sparkwax.testing.reference import BatchCounter, Counter

from test_driver_steps import assert_error, driver, raised

from kit import NOON as T0

STEP = "my-step"
KEY = "user-7"


class Boom(Exception):
    pass


def make_logic(**methods):
    """A StatefulLogic whose methods can be replaced; by default on_item
    returns ``([value], RETAIN)`` and notify_at returns ``value`` when the
    value is a datetime (so a test can schedule a timer)."""

    class Logic(StatefulLogic):
        def __init__(self, resume=None):
            self.at = resume

        def on_item(self, value):
            if isinstance(value, datetime):
                self.at = value
            return [value], RETAIN

        def notify_at(self):
            return self.at

        def snapshot(self):
            return self.at

    for name, fn in methods.items():
        setattr(Logic, name, fn)
    return Logic


def run_one(logic, values=("v",), *, script_tail=(), **options):
    return run(logic, [Batch([(KEY, v) for v in values], now=T0), *script_tail],
               step_id=STEP, **options)


def check_message(error, callback, value_repr):
    text = str(error)
    assert error.step_id == STEP and f"step {STEP!r}" in text
    assert error.key == KEY and f"key {KEY!r}" in text
    assert error.callback == callback and callback in text
    assert value_repr in text, text


def raiser(*_args):
    raise Boom("user code failed")


# --- callbacks raising ---------------------------------------------------------------


def test_on_item_raising_is_a_callback_error_chaining_the_user_exception():
    logic = make_logic(on_item=lambda self, v: raiser())
    with pytest.raises(CallbackError) as info:
        run_one(logic, [{"amount": 42}])
    err = info.value
    check_message(err, "on_item", "{'amount': 42}")
    assert err.value == {"amount": 42}
    assert isinstance(err.__cause__, Boom) and "user code failed" in str(err)


@pytest.mark.parametrize("name, script_tail", [
    ("on_notify", [Tick(now=T0 + timedelta(seconds=1))]),
    ("on_eof", [Eof()]),
    ("notify_at", []),
    ("snapshot", []),
])
@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_other_callbacks_raising(name, script_tail, restore):
    logic = make_logic(**{name: lambda self: raiser()})
    value = T0 + timedelta(seconds=1)
    tail = list(script_tail)
    if restore == "on_crash" and name == "snapshot":
        tail.append(Crash())  # live objects are only snapshotted at a crash (or finish)
    with pytest.raises(CallbackError) as info:
        run_one(logic, [value], script_tail=tail, restore=restore)
    err = info.value
    assert err.callback == name and name in str(err)
    assert err.step_id == STEP and err.key == KEY and f"key {KEY!r}" in str(err)
    assert isinstance(err.__cause__, Boom)


def test_iterating_emits_raising_is_a_callback_error():
    def gen():
        yield 1
        raiser()

    logic = make_logic(on_item=lambda self, v: (gen(), RETAIN))
    with pytest.raises(CallbackError) as info:
        run_one(logic)
    assert info.value.callback == "on_item" and isinstance(info.value.__cause__, Boom)


# --- return values ------------------------------------------------------------------


@pytest.mark.parametrize("returned, shown", [
    ([[], False], "[[], False]"),
    (([], False, 1), "([], False, 1)"),
    (([],), "([],)"),
    (None, "None"),
    ([1, 2], "[1, 2]"),
])
@pytest.mark.parametrize("callback", ["on_item", "on_eof"])
def test_non_2_tuple_return(callback, returned, shown):
    logic = make_logic(**{callback: (lambda self, *a: returned)})
    with pytest.raises(ReturnValueError) as info:
        run_one(logic, script_tail=[Eof()])
    check_message(info.value, callback, shown)
    assert info.value.value == returned
    assert "2-tuple" in str(info.value)


@pytest.mark.parametrize("flag", [1, 0, None, "yes", 1.0])
@pytest.mark.parametrize("callback", ["on_item", "on_notify", "on_eof"])
def test_non_bool_discard_flag(callback, flag):
    logic = make_logic(**{callback: (lambda self, *a: ([], flag))})
    value = T0 + timedelta(seconds=1)
    with pytest.raises(ReturnValueError) as info:
        run_one(logic, [value], script_tail=[Tick(now=value), Eof()])
    check_message(info.value, callback, repr(flag))
    assert info.value.value == flag and type(info.value.value) is type(flag)
    assert "bool" in str(info.value)


@pytest.mark.parametrize("emits", ["abc", b"abc", {"a": 1}, 5, None])
@pytest.mark.parametrize("callback", ["on_item", "on_eof"])
def test_emits_must_be_an_iterable_but_not_str_bytes_or_dict(callback, emits):
    logic = make_logic(**{callback: (lambda self, *a: (emits, RETAIN))})
    with pytest.raises(ReturnValueError) as info:
        run_one(logic, script_tail=[Eof()])
    check_message(info.value, callback, repr(emits))
    assert info.value.value == emits


@pytest.mark.parametrize("emits, expected", [
    ((1, 2), [1, 2]), ([1], [1]), ("generator", [3, 4]), ({5}, [5]),
    (range(2), [0, 1]), ((), []),
])
def test_any_other_iterable_is_accepted(emits, expected):
    # a generator is made in the callback: a builder holding one could not be shipped
    made = (lambda: (x for x in (3, 4))) if emits == "generator" else (lambda: emits)
    logic = make_logic(on_item=lambda self, v: (made(), RETAIN))
    assert run_one(logic).by_key.get(KEY, []) == expected


def test_batch_logic_validation():
    class BadBatch(BatchCounter):
        def on_batch(self, values):
            return [len(values)], "discard"

    with pytest.raises(ReturnValueError) as info:
        run(BadBatch, [Batch([(KEY, 1)])], batch=True, step_id=STEP)
    check_message(info.value, "on_batch", "'discard'")


# --- notify_at ------------------------------------------------------------------------


@pytest.mark.parametrize("moment", [datetime(2024, 1, 1, 12), "2024-01-01T12:00:00Z",
                                    date(2024, 1, 1), 1704110400000])
@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_notify_at_must_be_none_or_aware_datetime(moment, restore):
    logic = make_logic(notify_at=lambda self: moment)
    with pytest.raises(NotifyAtError) as info:
        run_one(logic, restore=restore)
    check_message(info.value, "notify_at", repr(moment))
    assert info.value.value == moment


def test_naive_notify_at_message_says_naive():
    logic = make_logic(notify_at=lambda self: datetime(2024, 1, 1, 12))
    with pytest.raises(NotifyAtError, match="naive"):
        run_one(logic)


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_aware_non_utc_notify_at_is_converted(restore):
    tokyo = timezone(timedelta(hours=9))
    moment = (T0 + timedelta(seconds=10)).astimezone(tokyo)
    logic = make_logic()
    result = run_one(logic, [moment], restore=restore)
    assert result.timers == {KEY: T0 + timedelta(seconds=10)}
    assert result.timers[KEY].utcoffset() == timedelta(0)

    fired = make_logic(on_notify=lambda self: ([("fired", self.at)], RETAIN))
    script_tail = [Tick(now=T0 + timedelta(seconds=10) - timedelta(milliseconds=1)),
                   Tick(now=T0 + timedelta(seconds=10))]
    out = run_one(fired, [moment], script_tail=script_tail, restore=restore)
    assert out.by_key == {KEY: [moment, ("fired", moment)]}


# --- snapshots ------------------------------------------------------------------------


def test_unpicklable_snapshot_is_a_snapshot_error():
    logic = make_logic(snapshot=lambda self: {"lock": threading.Lock()})
    with pytest.raises(SnapshotError) as info:
        run_one(logic)
    err = info.value
    check_message(err, "snapshot", "lock")
    assert type(err.value["lock"]) is type(threading.Lock())
    assert "cannot be pickled" in str(err)


def test_a_builder_that_captures_a_lock_is_refused_before_any_item():
    lock = threading.Lock()
    logic = make_logic(snapshot=lambda self: {"lock": lock})
    with pytest.raises(BuilderError, match="cannot be pickled") as info:
        run_one(logic)
    assert info.value.step_id == STEP and info.value.key is None


def test_unpicklable_snapshot_on_crash_mode_fails_at_the_crash():
    logic = make_logic(snapshot=lambda self: threading.Lock())
    with pytest.raises(SnapshotError):
        run_one(logic, script_tail=[Crash()], restore="on_crash")


def test_unpicklable_snapshot_on_crash_mode_fails_without_a_crash_too():
    # Live objects are encoded once when the run's result is read.
    logic = make_logic(snapshot=lambda self: threading.Lock())
    with pytest.raises(SnapshotError) as info:
        run_one(logic, restore="on_crash")
    assert info.value.key == KEY and info.value.step_id == STEP


def test_unpicklable_snapshot_in_bounded_mode():
    logic = make_logic(snapshot=lambda self: threading.Lock())
    with pytest.raises(SnapshotError) as info:
        run_bounded(logic, [(KEY, 1)], step_id=STEP)
    assert info.value.key == KEY and info.value.step_id == STEP


# --- builder --------------------------------------------------------------------------


def test_builder_raising_on_new_key():
    def builder(resume):
        raise Boom("cannot build")

    with pytest.raises(BuilderError) as info:
        run_one(builder)
    err = info.value
    check_message(err, "builder(None)", "None")
    assert isinstance(err.__cause__, Boom) and "cannot build" in str(err)


def test_a_builder_raising_when_sampled_at_plan_time_names_the_sampling_not_a_key():
    # a Spark plan builds one logic with resume_state=None to see its timers
    def make_logic(resume_state):
        return Counter(resume_state["n"])

    with pytest.raises(BuilderError) as info:
        Step(make_logic, STEP).uses_timers()
    err = info.value
    message = str(err)
    assert message.startswith(f"step {STEP!r}: the builder ")
    for expected in ("make_logic", "resume_state=None", "sample the logic", "TypeError"):
        assert expected in message, message
    assert "key None" not in message and "null" not in message
    assert (err.step_id, err.key, err.callback) == (STEP, None, "builder(None) at plan time")
    assert isinstance(err.__cause__, TypeError)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == message and again.callback == err.callback


def test_builder_raising_on_resume_shows_the_resume_state():
    def builder(resume):
        if resume is not None:
            raise Boom("bad resume")
        return Counter(resume)

    with pytest.raises(BuilderError) as info:
        run(builder, [Batch([(KEY, "a")]), Batch([(KEY, "b")])], step_id=STEP)
    check_message(info.value, "builder(resume_state)", "1")
    assert info.value.value == 1
    assert isinstance(info.value.__cause__, Boom)


@pytest.mark.parametrize("returned", [None, 5, object(), BatchCounter(None)])
def test_builder_returning_something_without_on_item(returned):
    with pytest.raises(BuilderError) as info:
        run_one(lambda resume: returned)
    check_message(info.value, "builder", "")
    assert info.value.value is returned
    assert "on_item" in str(info.value)


def test_batch_builder_returning_a_logic_without_on_batch():
    with pytest.raises(BuilderError, match="on_batch"):
        run(Counter, [Batch([(KEY, 1)])], batch=True, step_id=STEP)


def test_non_callable_builder():
    with pytest.raises(BuilderError) as info:
        Driver(Step.of(42, step_id=STEP))
    assert info.value.step_id == STEP and info.value.value == 42


# --- hierarchy and pickling -----------------------------------------------------------


def test_every_error_derives_from_sparkwax_error():
    for cls in (BuilderError, CallbackError, NotifyAtError, ReturnValueError, SnapshotError,
                InputError, SchemaError):
        assert issubclass(cls, LogicError)
    for cls in (LogicError, ConfigError):
        assert issubclass(cls, SparkwaxError)
    assert issubclass(CheckpointError, ConfigError)  # a damaged checkpoint, see errors.py
    assert issubclass(sparkwax.RescaleError, ConfigError)  # a refused rescale
    assert not issubclass(ConfigError, LogicError)
    assert issubclass(SparkwaxError, Exception)
    exported = {getattr(sparkwax, name) for name in sparkwax.__all__
                if name.endswith("Error")}
    assert exported == {BuilderError, CallbackError, CheckpointError, ConfigError, InputError,
                        LogicError, NotifyAtError, sparkwax.RescaleError, ReturnValueError,
                        SchemaError, SnapshotError, SparkwaxError}


def test_config_and_input_errors_from_the_runner():
    with pytest.raises(SparkwaxError):
        EventTime("")
    with pytest.raises(InputError) as info:
        run(Counter, [Batch([(KEY, {"ts": "noon"})])], time=EventTime("ts"), step_id=STEP)
    check_message(info.value, "event time", "'noon'")


@pytest.mark.parametrize("cls", [LogicError, BuilderError, CallbackError, NotifyAtError,
                                 ReturnValueError, SnapshotError, InputError])
def test_errors_pickle_keeping_attributes(cls):
    err = cls(STEP, ("k", 1), "on_item", {"v": [1, 2]}, "some reason")
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is cls
    assert str(copy) == str(err)
    assert (copy.step_id, copy.key, copy.callback, copy.value, copy.reason) == (
        STEP, ("k", 1), "on_item", {"v": [1, 2]}, "some reason")
    assert copy.args == err.args


def test_error_without_value_has_no_got_part_and_pickles():
    err = CallbackError(STEP, KEY, "on_eof", reason="it broke")
    assert str(err) == f"step {STEP!r}, key {KEY!r}, on_eof: it broke"
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.value is None


def test_raised_error_pickles():
    with pytest.raises(ReturnValueError) as info:
        run_one(make_logic(on_item=lambda self, v: ([], 1)))
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.value == 1 and copy.key == KEY


def test_short_repr_in_messages():
    big = list(range(1000))
    err = ReturnValueError(STEP, KEY, "on_item", big, "r")
    assert len(str(err)) < 200 and "..." in str(err)


def test_snapshot_error_for_unpicklable_value_can_be_pickled():
    with pytest.raises(SnapshotError) as info:
        run_one(make_logic(snapshot=lambda self: threading.Lock()))
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.key == KEY


NULL_KEY = ("null or NaN key; drop or fill such rows before the step "
            "(e.g. df.na.drop(subset=[...]))")


@pytest.mark.parametrize("key", [None, float("nan"), ("a", None), (1, float("nan"))],
                         ids=["none", "nan", "tuple-none", "tuple-nan"])
@pytest.mark.parametrize("values", [["x"], []], ids=["a-row", "no-row"])
def test_a_null_key_is_an_input_error_with_every_field(key, values):
    # every entry point: check_key itself, the general path and the plain one
    step = driver()
    for call in (lambda: step.check_key(key, values),
                 lambda: step.activate(key, None, values, 0, eof=True),
                 lambda: step.activate(key, None, values, 0)):
        error = raised(call)
        assert_error(error, InputError, "s", error.key, "key",
                     values[0] if values else NO_VALUE, NULL_KEY)
        assert error.key is key


def test_a_key_that_is_not_null_passes_whatever_its_type():
    for key in ["a", 3, 2.5, ("a", 1), (None,) * 0, b"k"]:
        assert driver().check_key(key, ["x"]) is None


class Alarm(sparkwax.StatefulLogic):
    """A timer due at once; its timer callbacks do what ``how`` says:
    ``raise``, ``shape`` (not a 2-tuple) or ``flag`` (a discard that is not a bool)."""

    RESULTS = {"shape": ["x"], "flag": ([], "no")}

    def __init__(self, resume=None):
        self.how = resume

    def on_item(self, value):
        self.how = value
        return [], RETAIN

    def notify_at(self):
        return None if self.how is None else datetime(2024, 1, 1, tzinfo=timezone.utc)

    def _fire(self):
        if self.how == "raise":
            raise ValueError("boom")
        return self.RESULTS[self.how]

    def on_notify(self):
        return self._fire()

    def snapshot(self):
        return self.how


class TwoClockAlarm(Alarm):
    """Alarm's deadline instead of its timer (an EventTime step's second clock)."""

    def processing_notify_at(self):
        if self.how == "deadline":
            raise ValueError("no deadline")
        return self.notify_at()

    def on_processing_notify(self):
        return self._fire()


@pytest.mark.parametrize("how", ["raise", "shape", "flag"])
@pytest.mark.parametrize("path", ["general", "two_clocks"])
def test_a_timer_callbacks_error_on_the_general_path_has_every_field(how, path):
    # the general path (EOF, or a step with both timer kinds) names the key
    # and the callback as the plain path does (test_driver_steps)
    stored = sparkwax.recovery.encode(how, step_id="s", key="k")
    if path == "general":
        name, step = "on_notify", Driver(Step.of(Alarm, step_id="s"))
        call = lambda: step.activate("k", stored, [], 2**42, eof=True)  # noqa: E731
    else:
        name = "on_processing_notify"
        step = Driver(Step.of(TwoClockAlarm, step_id="s", time=EventTime("ts")))
        call = lambda: step.activate("k", stored, [], 0, event_times=[],  # noqa: E731
                                     processing_ms=2**42)
    error = raised(call)
    if how == "raise":
        assert_error(error, CallbackError, "s", "k", name, NO_VALUE,
                     f"{name} raised ValueError('boom')")
    elif how == "shape":
        assert_error(error, ReturnValueError, "s", "k", name, ["x"],
                     "must return a 2-tuple (emits, discard)")
    else:
        assert_error(error, ReturnValueError, "s", "k", name, "no",
                     "the discard flag must be a bool (RETAIN or DISCARD)")


class EndsUnpicklable(sparkwax.StatefulLogic):
    """Its snapshot raises; on_eof discards it (so a stream's commit never asks)."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [value], RETAIN

    def on_eof(self):
        return ["eof"], sparkwax.DISCARD

    def snapshot(self):
        raise ValueError("no snapshot")


def test_the_snapshot_before_on_eof_is_the_bounded_inputs_only():
    # a bounded run snapshots the live logic before on_eof (its checkpoint);
    # a stream's EOF (finish) commits after on_eof: a discarded logic, no snapshot
    step = Driver(Step.of(EndsUnpicklable, step_id="s"))
    assert step.activate("k", None, ["x"], 0, eof=True).emits == ["x", "eof"]
    error = raised(step.activate_bounded, "k", ["x"])
    assert_error(error, CallbackError, "s", "k", "snapshot", NO_VALUE,
                 "snapshot() raised ValueError('no snapshot')")


def test_a_deadline_that_raises_when_a_restored_logic_is_asked_names_the_key():
    # the general path asks a restored two-clock logic for its deadline first
    step = Driver(Step.of(TwoClockAlarm, step_id="s", time=EventTime("ts")))
    stored = sparkwax.recovery.encode("deadline", step_id="s", key="k")
    error = raised(step.activate, "k", stored, [], 0, event_times=[], processing_ms=0)
    assert_error(error, CallbackError, "s", "k", "processing_notify_at", NO_VALUE,
                 "processing_notify_at() raised ValueError('no deadline')")
