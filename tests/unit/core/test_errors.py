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
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Eof, Tick, run, run_bounded
from sparkwax.testing.reference import BatchCounter, Counter

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
    assert issubclass(sparkwax.CheckpointInUseError, ConfigError)  # another query holds it
    assert not issubclass(ConfigError, LogicError)
    assert issubclass(SparkwaxError, Exception)
    exported = {getattr(sparkwax, name) for name in sparkwax.__all__
                if name.endswith("Error")}
    assert exported == {BuilderError, CallbackError, CheckpointError,
                        sparkwax.CheckpointInUseError, ConfigError, InputError,
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
