"""State kept outside snapshot() is lost at every activation (Spark's rule):
sparkwax says so loudly, once per step, when a rebuilt logic's notify_at()
differs from the one committed with the snapshot."""

from __future__ import annotations

import sys
import warnings
from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax import LostStateWarning
from sparkwax._driver import Driver
from sparkwax.step import Step
from sparkwax.testing import Batch, Eof, check_logic, run
from sparkwax.testing.strategies import START, timestamped_items
from sparkwax.testing.strategies.logic_check import LogicCheckFailed

from kit import T0
from test_driver_steps import Keeper, driver
from test_fast_path_cases import ms

TIME = sw.EventTime("ts")


def at(minutes):
    return {"ts": T0 + timedelta(minutes=minutes), "value": 1}


class TimerOutsideSnapshot(sw.StatefulLogic):
    """Works under Bytewax (live objects); its timer is not in snapshot()."""

    def __init__(self, resume=None):
        self.count = resume or 0
        self.timer = None

    def on_item(self, value):
        self.count += 1
        self.timer = value["ts"] + timedelta(minutes=5)
        return [], sw.RETAIN

    def notify_at(self):
        return self.timer

    def on_notify(self):
        self.timer = None
        return [("fired", self.count)], sw.RETAIN

    def on_eof(self):
        return [("eof", self.count)], sw.RETAIN

    def snapshot(self):
        return self.count


class TimerInSnapshot(TimerOutsideSnapshot):
    def __init__(self, resume=None):
        self.count, self.timer = resume or (0, None)

    def snapshot(self):
        return (self.count, self.timer)


SCRIPT = [Batch([("a", at(0)), ("b", at(1))]), Batch([("c", at(10))]), Eof()]


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_a_lost_timer_warns_once_per_step_naming_step_and_class(restore):
    script = SCRIPT if restore == "always" else [SCRIPT[0], sw.testing.Crash(), *SCRIPT[1:]]
    with pytest.warns(LostStateWarning) as caught:
        result = run(TimerOutsideSnapshot, script, time=TIME, step_id="alerts",
                     restore=restore)
    messages = [str(w.message) for w in caught if w.category is LostStateWarning]
    assert len(messages) == 1 and result.lost_state == messages
    assert "step 'alerts': TimerOutsideSnapshot rebuilt from its snapshot (key 'a')" in \
        messages[0]
    assert "notify_at() = None" in messages[0] and "put it in snapshot()" in messages[0]
    # what was lost: a's and b's timers never fire (under Bytewax they would)
    assert result.by_key == {"a": [("eof", 1)], "b": [("eof", 1)], "c": [("eof", 1)]}


def test_a_logic_with_its_timer_in_the_snapshot_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LostStateWarning)
        result = run(TimerInSnapshot, SCRIPT, time=TIME)
    assert result.lost_state == []
    assert result.by_key["a"] == [("fired", 1), ("eof", 1)]


def test_check_logic_reports_the_lost_state():
    with pytest.raises(LogicCheckFailed, match="lost_state(.|\n)*TimerOutsideSnapshot"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LostStateWarning)
            check_logic(TimerOutsideSnapshot, items=timestamped_items(min_size=2),
                        time=TIME, max_examples=30)
    check_logic(TimerInSnapshot, items=timestamped_items(), time=TIME, max_examples=10)


def test_the_spark_host_passes_the_committed_timer():
    pytest.importorskip("pyspark")
    import pandas as pd

    from sparkwax.engine.hosts.columns import InputLayout
    from sparkwax.engine.hosts.host import StreamingHost

    class FakeState:
        exists, hasTimedOut = True, True

        def __init__(self, stored):
            self.get = stored

        def getCurrentWatermarkMs(self):
            return 10 * 60_000

        def getCurrentProcessingTimeMs(self):  # EventTime: the host must not use it
            return 0

        def update(self, row):
            self.get = row

        def setTimeoutTimestamp(self, ms):
            pass

        def remove(self):
            self.exists = False

    class Outputs:  # what the host yields is not the point here
        metrics = False

        def frame(self, *args):
            return None

        metrics_frame = frame

    driver = Driver(Step.of(TimerOutsideSnapshot, step_id="alerts", time=TIME))
    first = driver.activate("a", None, [at(0)], 0)
    layout = InputLayout(names=("ts", "value"), sources=("ts", "value"), kinds=("o", "o"),
                         scalar=False, order_by=(), event_column="__sw_event_us")
    host = StreamingHost(driver, layout, outputs=Outputs(), timeout_conf=TIME.spark_timeout, single_key=True)
    with pytest.warns(LostStateWarning, match="step 'alerts': TimerOutsideSnapshot"):
        list(host(("a",), iter([pd.DataFrame()]), FakeState((first.state, first.timer))))


def test_callback_errors_are_runtime_errors_like_bytewaxs():
    class Broken(sw.StatefulLogic):
        def __init__(self, resume=None):
            pass

        def on_item(self, value):
            raise KeyError("price")

        def snapshot(self):
            return None

    with pytest.raises(RuntimeError, match="step 'prices', key 'k', on_item") as caught:
        run(Broken, [Batch([("k", 1)])], step_id="prices")
    assert isinstance(caught.value, sw.CallbackError) and \
        isinstance(caught.value.__cause__, KeyError)


def test_the_packed_host_keeps_the_committed_timer_per_key():
    pytest.importorskip("pyspark")
    from sparkwax.engine.hosts.bucket import Bucket

    bucket = Bucket.empty()
    bucket.put("a", b"blob-a", 1_000, 999)
    bucket.put("b", b"blob-b", None, None)
    assert (bucket.timer("a"), bucket.timer("b"), bucket.timer("zz")) == (1_000, None, None)
    stored, _ = bucket.encode()
    again = Bucket.decode(stored)
    assert (again.timer("a"), again.timer("b")) == (1_000, None)
    assert type(again.timer("a")) is int


class Forgetful(Keeper):
    """Keeps its timer outside its snapshot: a rebuilt one has none."""

    def snapshot(self):
        return {k: v for k, v in self.state.items() if k != "timer"}


def test_no_committed_timer_is_no_lost_state():
    # A host that does not keep the committed timer passes none: no warning.
    stored = driver().activate("k", None, [{"timer": START}], 0).state
    with warnings.catch_warnings():
        warnings.simplefilter("error", LostStateWarning)
        for order in (None, [[1, 2]]):  # the plain path, the general one
            act = driver().activate("k", stored, [{"n": 1}, {"n": 2}], 0, order=order)
            assert act.timer == ms(0) and act.emits == [{"n": 1}, {"n": 2}]


def test_the_lost_state_warning_names_the_users_class_and_both_timers():
    step = driver(Forgetful, max_state_bytes=10_000)  # a wrapped logic: the user's is named
    first = step.activate("k", None, [{"timer": START}], 0)
    with pytest.warns(LostStateWarning) as caught:
        step.activate("k", first.state, [], 0, committed_timer=first.timer)
    assert str(caught[0].message) == (
        f"step 's': Forgetful rebuilt from its snapshot (key 'k') has notify_at() = None, "
        f"but the logic that committed the snapshot had {START.isoformat()}. Every "
        f"activation rebuilds the logic with builder(snapshot) (as Spark's state store "
        f"does), so state kept outside snapshot() is lost: put it in snapshot(). (Warned "
        f"once per step.)")


@pytest.mark.parametrize("path", ["plain", "general", "live", "live_general"])
def test_the_warning_shows_the_rebuilt_timer_and_a_right_committed_one_is_quiet(path):
    # the committed timer a host kept, against the one the rebuilt logic reads
    step = driver()
    first = step.activate("k", None, [{"timer": START}], 0)
    order = [[]] if path.endswith("general") else None
    call = (lambda committed: step.activate_live("k", None, first.state, [], 0, order=order,
                                                 committed_timer=committed)) \
        if path.startswith("live") else \
        (lambda committed: step.activate("k", first.state, [], 0, order=order,
                                         committed_timer=committed))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LostStateWarning)
        call(first.timer)
    later = START + timedelta(minutes=1)
    with pytest.warns(LostStateWarning) as caught:
        call(first.timer + 60_000)
    assert str(caught[0].message).startswith(
        f"step 's': Keeper rebuilt from its snapshot (key 'k') has notify_at() = "
        f"{START.isoformat()}, but the logic that committed the snapshot had "
        f"{later.isoformat()}.")


def test_the_warning_points_at_the_users_line():
    # however deep in sparkwax it is raised (the runner, a wrapper, a path)
    with pytest.warns(LostStateWarning) as caught:
        line = sys._getframe().f_lineno + 1
        run(TimerOutsideSnapshot, SCRIPT, time=TIME, step_id="alerts")
    step = driver(Forgetful, max_state_bytes=10_000)
    first = step.activate("k", None, [{"timer": START}], 0)
    with pytest.warns(LostStateWarning) as direct:
        direct_line = sys._getframe().f_lineno + 1
        step.activate("k", first.state, [], 0, order=[[]], committed_timer=first.timer)
    lost = [w for w in caught if w.category is LostStateWarning]
    assert [(w.filename, w.lineno) for w in lost] == [(__file__, line)]
    assert direct[0].filename == __file__ and direct[0].lineno == direct_line
