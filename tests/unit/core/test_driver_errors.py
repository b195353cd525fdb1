"""The driver's errors where the unit tests of its steps did not read them
(mutation testing found them, docs/testing.md): a null key's InputError,
timer and deadline callbacks' errors on the general path, the snapshot
before ``on_eof`` of a bounded input. Every field of each error is checked
(``test_driver_steps.assert_error``)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

import sparkwax
from sparkwax import RETAIN, CallbackError, EventTime, InputError
from sparkwax._driver import Driver
from sparkwax.errors import NO_VALUE, ReturnValueError
from sparkwax.step import Step

from kit import plain_keys
from test_driver_steps import assert_error, driver, raised


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


def test_the_driver_takes_only_a_step():
    with pytest.raises(TypeError) as caught:
        Driver("counter")
    assert str(caught.value) == "Driver needs a sparkwax.step.Step, got 'counter'"


def test_a_restored_logics_timer_that_raises_names_the_key_on_every_path():
    # the restore step reads the rebuilt logic's notify_at() first
    stored = sparkwax.recovery.encode({"bad": "notify_at"}, step_id="s", key="k")
    step = driver()
    for call in (lambda: step.activate("k", stored, [], 0),
                 lambda: step.activate("k", stored, [], 0, eof=True),
                 lambda: step.activate_live("k", None, stored, [], 0),
                 lambda: plain_keys(step, ["k"], [stored], [[]], [NO_VALUE], 0)):
        assert_error(raised(call), CallbackError, "s", "k", "notify_at", NO_VALUE,
                     "notify_at() raised ValueError('no timer')")


def test_a_builder_functions_deadlines_in_a_processing_time_step_name_step_and_class():
    # a builder function's logic is known at its first build: the refusal comes then
    step = Driver(Step.of(lambda resume: TwoClockAlarm(resume), step_id="alarms"))
    with pytest.raises(sparkwax.ConfigError) as caught:
        step.activate("k", None, ["x"], 0)
    assert str(caught.value) == (
        "step 'alarms': TwoClockAlarm has processing_notify_at(), a processing-time deadline "
        "beside notify_at(); that needs an EventTime step. In a ProcessingTime step there "
        "is one clock: use notify_at()")


@pytest.mark.parametrize("path", ["plain", "general", "plain_keys"])
def test_the_committed_state_is_recovery_encodes_bytes(path):
    # the commit step encodes the common case itself: the same bytes as encode()
    # (protocol 5), so every host stores what the state reader decodes alike
    step = driver()
    snapshot = {"n": 1, "big": list(range(50))}
    state = {"plain": lambda: step.activate("k", None, [snapshot], 0).state,
             "general": lambda: step.activate("k", None, [snapshot], 0, eof=True).state,
             "plain_keys": lambda: plain_keys(step, ["k"], [None], [[snapshot]], [NO_VALUE],
                                              0).states[0]}[path]()
    assert state == sparkwax.recovery.encode(snapshot, step_id="s", key="k")
