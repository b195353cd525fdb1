"""Each step of the driver (restore, due timer, items, commit, the result)
on every entry point and both paths: what a wrong logic's error says, every
form a stored blob comes in, a timer's exact millisecond, a batch logic's
list, the activation's time. ``tests/unit/core/test_fast_path_cases.py`` has
the counts and restore cases.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

import sparkwax as sw
from sparkwax._driver import Driver
from sparkwax.errors import NO_VALUE, BuilderError, CallbackError, InputError, LogicError
from sparkwax.logic import RETAIN, StatefulBatchLogic, StatefulLogic
from sparkwax.operators import tag
from sparkwax.recovery import encode
from sparkwax.step import Step
from sparkwax.testing.strategies import START

from kit import plain_keys
from test_fast_path_cases import Tally, at, general_driver, ms


class Slow(StatefulLogic):
    """Takes at least 2 ms per item: an activation's callback_us is known."""

    def __init__(self, resume=None):
        self.count = resume or 0

    def on_item(self, value):
        time.sleep(0.002)
        self.count += 1
        return [self.count], RETAIN

    def snapshot(self):
        return self.count


@pytest.mark.parametrize("entry", ["plain_keys", "activate", "general", "live", "live_general",
                                   "bounded"])
def test_callback_us_is_the_activations_time_in_microseconds(entry):
    driver = Driver(Step.of(Slow, step_id="slow")) if entry in ("plain_keys", "activate", "live") \
        else general_driver(Slow, False)
    calls = {
        "plain_keys": lambda: plain_keys(driver, ["a"], [None], [["x"]], [NO_VALUE],
                                         0).metrics.callback_us,
        "activate": lambda: driver.activate("a", None, ["x"], 0).callback_us,
        "general": lambda: driver.activate("a", None, ["x"], 0).callback_us,
        "live": lambda: driver.activate_live("a", None, None, ["x"], 0)[0].callback_us,
        "live_general": lambda: driver.activate_live("a", None, None, ["x"], 0)[0].callback_us,
        "bounded": lambda: driver.activate_bounded("a", ["x"]).callback_us,
    }
    before = time.perf_counter_ns()
    spent = calls[entry]()
    elapsed_us = (time.perf_counter_ns() - before) // 1000
    assert type(spent) is int and 2000 <= spent <= elapsed_us


class TimerFailsLater(StatefulLogic):
    """``notify_at()`` raises from its second call on (a live logic's next
    activation reads it first)."""

    def __init__(self, resume=None):
        self.reads = 0

    def on_item(self, value):
        return [value], RETAIN

    def notify_at(self):
        self.reads += 1
        if self.reads > 1:
            raise RuntimeError("no timer today")
        return None

    def snapshot(self):
        return None


@pytest.mark.parametrize("flat", [True, False])
def test_a_live_logics_timer_error_names_its_key(flat):
    driver = Driver(Step.of(TimerFailsLater, step_id="late")) if flat \
        else general_driver(TimerFailsLater, False)
    _, logic = driver.activate_live(("k", 1), None, None, ["x"], 0)
    with pytest.raises(sw.CallbackError) as caught:
        driver.activate_live(("k", 1), logic, None, ["y"], 0)
    assert (caught.value.key, caught.value.callback) == (("k", 1), "notify_at")


class Kept(StatefulLogic):
    """Keeps what its items say: a plain value, or a function (only
    cloudpickle stores it) when an item is "fn"."""

    def __init__(self, resume=None):
        self.kept = resume

    def on_item(self, value):
        self.kept = (lambda: "fn") if value == "fn" else value
        return [self.kept() if callable(self.kept) else self.kept], RETAIN

    def snapshot(self):
        return self.kept


def restore_calls(driver):
    """How each entry point restores ``stored`` and runs one item "x": the
    logic's emit (the restored value is what ``on_item`` saw before)."""
    return {
        "activate": lambda stored: driver.activate("k", stored, [], 0),
        "live": lambda stored: driver.activate_live("k", None, stored, [], 0)[0],
        "plain_keys": lambda stored: plain_keys(driver, ["k"], [stored], [[]], [NO_VALUE],
                                                0),
    }


@pytest.mark.parametrize("flat, entry", [  # activate_keys is the flattened path only
    (True, "activate"), (True, "live"), (True, "plain_keys"), (False, "activate"),
    (False, "live")])
def test_every_stored_form_restores(flat, entry):
    # The restore step reads the plain pickle's header itself and leaves every
    # other form to recovery.decode: a cloudpickled snapshot, a large one, a
    # bytearray or memoryview of the blob, and a damaged blob (a SnapshotError).
    driver = Driver(Step.of(Kept, step_id="kept")) if flat else general_driver(Kept, False, "kept")
    call = restore_calls(driver)[entry]

    def restored(stored):
        act = call(stored)
        return act.states[0] if entry == "plain_keys" else act.state, act

    big = "v" * 5000
    for value, form in [("fn", bytes), ("small", bytes), (big, bytes), ("small", bytearray),
                        ("small", memoryview), (big, memoryview)]:
        blob = driver.activate("k", None, [value], 0).state
        assert blob is not None
        state, act = restored(form(blob))
        if entry != "live":
            assert state is not None and bytes(state) == bytes(blob)
        follow = driver.activate("k", form(blob), ["again"], 0)
        assert follow.emits == ["again"] and follow.created == 0
        if value == "fn":  # the function came back through cloudpickle
            logic = driver.activate_live("k", None, form(blob), [], 0)[1]
            assert callable(logic.kept) and logic.kept() == "fn"
        elif entry == "live":
            assert driver.activate_live("k", None, form(blob), [], 0)[1].kept == value
    damaged = bytes(driver.activate("k", None, ["small"], 0).state)[:-3]
    with pytest.raises(sw.SnapshotError) as caught:
        call(damaged)
    assert (caught.value.step_id, caught.value.key) == ("kept", "k")


class Broken(StatefulLogic):
    """Goes wrong as its item says."""

    def __init__(self, resume=None):
        if resume == "builder":
            raise KeyError("no")
        self.how = resume

    def on_item(self, value):
        self.how = value
        if value == "raise":
            raise RuntimeError("boom")
        if value == "single":
            return 1
        if value == "flag":
            return [1], "no"
        if value == "text":
            return "abc", RETAIN
        if value == "builder":
            return [], RETAIN
        return [value], RETAIN

    def notify_at(self):
        if self.how == "notify":
            raise ValueError("when?")
        if self.how == "naive":
            return START.replace(tzinfo=None)
        return None

    def snapshot(self):
        if self.how == "snapshot":
            raise OSError("disk")
        return self.how


REASONS = {
    "raise": ("on_item", "on_item raised RuntimeError('boom') on this value"),
    "single": ("on_item", "must return a 2-tuple (emits, discard)"),
    "flag": ("on_item", "the discard flag must be a bool (RETAIN or DISCARD)"),
    "text": ("on_item", "emits must be an iterable of values (a list, tuple or generator); "
                        "wrap a single value in a list"),
    "notify": ("notify_at", "notify_at() raised ValueError('when?')"),
    "naive": ("notify_at", "notify_at() must return None or an aware datetime: "),
    "snapshot": ("snapshot", "snapshot() raised OSError('disk')"),
    "builder": ("builder(resume_state)", "the builder raised KeyError('no')"),
}


@pytest.mark.parametrize("flat", [True, False])
@pytest.mark.parametrize("what", sorted(REASONS))
def test_each_steps_error_names_the_callback_and_says_what_went_wrong(flat, what):
    driver = Driver(Step.of(Broken, step_id="broken")) if flat \
        else general_driver(Broken, False, "broken")
    runs = [driver.activate, lambda key, stored, values, now: driver.activate_live(
        key, None, stored, values, now)]
    if flat:
        runs.append(lambda key, stored, values, now: plain_keys(
            driver, [key], [stored], [values], [NO_VALUE], now))
    for run_one in runs:
        if what == "builder":  # the builder fails when it restores the snapshot "builder"
            stored = driver.activate("k", None, ["builder"], 0).state
            call = (lambda: run_one("k", stored, ["x"], 0))
        else:
            call = (lambda: run_one("k", None, [what], 0))
        if what == "snapshot" and run_one is runs[1]:
            continue  # a live logic is not snapshotted
        with pytest.raises(sw.LogicError) as caught:
            call()
        callback, reason = REASONS[what]
        assert (caught.value.step_id, caught.value.key, caught.value.callback) == \
            ("broken", "k", callback)
        assert caught.value.reason.startswith(reason) if what == "naive" \
            else caught.value.reason == reason


class ListOnly(StatefulBatchLogic):
    """A batch logic that says what type its values came in; its builder
    fails for a key's first logic when the step is built with ``fail``."""

    fail = False

    def __init__(self, resume=None):
        if self.fail:
            raise KeyError("first")
        self.timer = resume

    def on_batch(self, values):
        self.timer = at(values[0]) if type(values[0]) is int else None
        return [type(values).__name__], RETAIN

    def notify_at(self):
        return self.timer

    def on_notify(self):
        self.timer = None
        return ["fired"], RETAIN

    def snapshot(self):
        return self.timer


@pytest.mark.parametrize("flat", [True, False])
def test_a_batch_logic_gets_a_list_and_its_builder_error_names_the_key(flat, monkeypatch):
    driver = Driver(Step.of(ListOnly, step_id="list", batch=True)) if flat \
        else general_driver(ListOnly, True, "list")
    assert driver.activate("k", None, ("x", "y"), 0).emits == ["list"]
    assert driver.activate_live("k", None, None, ("x",), 0)[0].emits == ["list"]
    if flat:
        assert plain_keys(driver, ["k"], [None], [("x",)], [NO_VALUE], 0).emits == \
            [["list"]]
    monkeypatch.setattr(ListOnly, "fail", True)
    with pytest.raises(sw.BuilderError) as caught:
        driver.activate("k", None, ("x",), 0)
    assert (caught.value.key, caught.value.callback) == ("k", "builder(None)")


@pytest.mark.parametrize("builder, batch", [(Tally, False), (ListOnly, True)])
@pytest.mark.parametrize("flat", [True, False])
def test_a_timer_fires_at_its_own_millisecond_and_not_before(builder, batch, flat):
    driver = Driver(Step.of(builder, step_id="tally", batch=batch)) if flat \
        else general_driver(builder, batch)
    stored = driver.activate("k", None, [7], ms(0)).state
    for entry in ("activate", "live", "plain_keys"):
        if entry == "plain_keys" and not flat:
            continue
        counts = []
        for now_ms in (ms(7) - 1, ms(7)):
            if entry == "activate":
                act = driver.activate("k", stored, [], now_ms, committed_timer=ms(7))
                counts.append((act.fired, act.timer))
            elif entry == "live":
                act = driver.activate_live("k", None, stored, [], now_ms,
                                           committed_timer=ms(7))[0]
                counts.append((act.fired, act.timer))
            else:
                acts = plain_keys(driver, ["k"], [stored], [[]], [ms(7)], now_ms)
                counts.append((acts.metrics.timers_fired, acts.timers[0]))
        assert counts == [(0, ms(7)), (1, None)], entry


# -- every field of each error (a host shows them all) --------------------------

TIME = sw.EventTime("ts")
NAIVE = datetime(2024, 1, 1)


def raised(call, *args, **kwargs):
    with pytest.raises(LogicError) as info:
        call(*args, **kwargs)
    return info.value


def assert_error(error, kind, step_id, key, callback, value, reason):
    """Every field of a LogicError, and its text (which shows ``value`` unless
    it is NO_VALUE, so NO_VALUE and None differ)."""
    want = kind(step_id, key, callback, value, reason)
    assert type(error) is kind
    assert (error.step_id, error.key, error.callback, error.value, error.reason) == \
        (want.step_id, want.key, want.callback, want.value, want.reason)
    assert str(error) == str(want)


class Keeper(StatefulLogic):
    """Keeps its snapshot; what it is given decides what its callbacks do:
    ``timer`` (notify_at), ``bad`` (the callback named raises), ``emits``
    (on_item's emits), ``clocks`` (the snapshot records the clocks)."""

    def __init__(self, resume=None):
        self.state = dict(resume or {})

    def on_item(self, value):
        self.state.update(value)
        return self.state.get("emits", [value]), RETAIN

    def notify_at(self):
        if self.state.get("bad") == "notify_at":
            raise ValueError("no timer")
        return self.state.get("timer")

    def on_notify(self):
        self.state.pop("timer")
        return [], RETAIN

    def snapshot(self):
        if self.state.get("bad") == "snapshot":
            raise ValueError("no snapshot")
        if "clocks" in self.state:  # the clocks the snapshot was taken at
            return {**self.state, "clocks": (sw.now(), sw.processing_now())}
        return self.state


def driver(builder=Keeper, **options):
    return Driver(Step.of(builder, step_id="s", **options))


def test_an_order_by_callable_that_raises():
    value = {"n": 1}

    def order(row):
        raise ValueError("no order")

    error = raised(driver(order_by=order).read_columns, "k", [value])
    assert_error(error, InputError, "s", "k", "order_by", value,
                 "the order_by callable raised ValueError('no order')")


@pytest.mark.parametrize("bounded", [False, True])
def test_order_by_values_that_cannot_be_compared(bounded):
    reason = ("the rows' order_by values cannot be compared: '<' not supported between "
              "instances of 'str' and 'int'")
    if bounded:  # a step with sides: its rows arranged with their side numbers
        values = [v for _, v in tag("a", [("k", {"ts": START})]) +
                  tag("b", [("k", {"ts": START})])]
        error = raised(driver(time=TIME, sides=["a", "b"]).activate_bounded, "k", values,
                       event_times=[0, 0], order=[[1, "x"]])
    else:
        error = raised(driver().activate, "k", None, [{}, {}], 0, order=[[1, "x"]])
    assert_error(error, InputError, "s", "k", "order_by", NO_VALUE, reason)


def test_emits_whose_iteration_raises():
    def emits():
        yield 1
        raise ValueError("broken")

    error = raised(driver().activate, "k", None, [{"emits": emits()}], 0)
    assert_error(error, CallbackError, "s", "k", "on_item", NO_VALUE,
                 "iterating the emits raised ValueError('broken')")


@pytest.mark.parametrize("resume", [None, {"n": 1}])
def test_a_builder_that_raises(resume):
    def builder(snapshot):
        raise ValueError("no logic")

    stored = None if resume is None else encode(resume, step_id="s", key="k")
    error = raised(driver(builder).activate, "k", stored, [{}], 0)
    what = "builder(None)" if resume is None else "builder(resume_state)"
    assert_error(error, BuilderError, "s", "k", what, NO_VALUE if resume is None else resume,
                 "the builder raised ValueError('no logic')")


@pytest.mark.parametrize("callback", ["snapshot", "notify_at"])
def test_snapshot_or_notify_at_that_raises(callback):
    error = raised(driver().activate, "k", None, [{"bad": callback}], 0)
    assert_error(error, CallbackError, "s", "k", callback, NO_VALUE,
                 f"{callback}() raised ValueError('no {callback.replace('notify_at', 'timer')}')")
