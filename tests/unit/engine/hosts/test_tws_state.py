"""The GroupState a host sees inside transformWithStateInPandas
(``hosts.tws``): what it writes to the ValueState row and to Spark's timers.
Whatever a host does, call after call, a key has at most one timer
registered, and it is the one its row records (none left behind to fire);
nothing it does makes Spark warn (a read of an absent row, a timer
registered twice or deleted when absent: ``_Value`` and ``_Timers`` record
those as Spark's state server and ``TimerStateImpl`` log them)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from sparkwax.engine.hosts.tws import TwsGroupState, _Clock, _Timers, _Value


def call(value, timers, *, fired=None, act=None, timeout=None, duration=None):
    """One call of the host; ``fired``: a handleExpiredTimer call for that
    timer, which PySpark deletes once the call returns, as it does."""
    state = TwsGroupState(value, timers, _Clock(), timed_out=fired is not None, fired=fired)
    if act == "update":
        state.update((b"s", 7))
    elif act == "remove":
        state.remove()
    if timeout is not None:
        state.setTimeoutTimestamp(timeout)
    if duration is not None:
        state.setTimeoutDuration(duration)
    state.finish()
    if fired is not None:
        timers.deleteTimer(fired)
    return state


def test_an_update_with_a_timeout_registers_it_and_a_new_one_replaces_it():
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    assert value.row == (b"s", 7, 500) and timers.registered == [500]
    call(value, timers, act="update", timeout=900)
    assert value.row == (b"s", 7, 900) and timers.registered == [900]
    call(value, timers, act="update", timeout=900)  # the same: not registered twice
    assert timers.registered == [900]


def test_an_update_without_a_timeout_deletes_the_timer_as_groupstate_clears_it():
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    call(value, timers, act="update")
    assert value.row == (b"s", 7, None) and timers.registered == []


def test_a_remove_clears_the_row_and_its_timer():
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    state = call(value, timers, act="remove")
    assert value.row is None and timers.registered == [] and not state.exists


def test_a_duration_counts_from_the_batchs_processing_time():
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", duration=250)
    assert timers.registered == [1_250]  # _Clock's processing time is 1,000 ms


def test_a_fired_timer_is_left_to_pyspark_and_the_row_forgets_it():
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    state = call(value, timers, fired=500)
    assert state.hasTimedOut and state.get == (b"s", 7)
    assert value.row == (b"s", 7, None) and timers.registered == []
    assert timers.warnings == []


def test_a_timeout_rearmed_at_the_fired_time_is_kept_one_ms_later():
    """Spark fires a timer once the watermark reaches it; a host whose key
    is not due yet (GroupState's timeout fires once the watermark passes
    it) arms it again at the same time. Registered as it was, it was
    "already" there, then PySpark deleted it: the key never woke again."""
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    call(value, timers, fired=500, act="update", timeout=500)
    assert timers.registered == [501] and value.row == (b"s", 7, 501)
    assert timers.warnings == []
    call(value, timers, act="update", timeout=900)  # the next change deletes what is there
    assert timers.registered == [900] and timers.warnings == []


def test_a_timeout_set_without_an_update_keeps_the_row_and_arms_it():
    """GroupState's promise: ``setTimeoutTimestamp`` alone keeps the state
    and sets the timeout (the adapter dropped it before); a key without
    state cannot have one, as GroupState refuses it."""
    value, timers = _Value(), _Timers()
    call(value, timers, act="update", timeout=500)
    call(value, timers, timeout=900)
    assert value.row == (b"s", 7, 900) and timers.registered == [900]
    call(value, timers, fired=900, timeout=900)  # re-armed at the fired time, no update
    assert value.row == (b"s", 7, 901) and timers.registered == [901]
    import pytest

    with pytest.raises(RuntimeError, match="a timeout for a key without state"):
        call(_Value(), _Timers(), timeout=5)


def test_a_new_key_is_read_without_a_warning():
    value, timers = _Value(), _Timers()
    state = call(value, timers, act="update", timeout=500)
    assert not value.warnings and state.exists


CALLS = st.lists(st.fixed_dictionaries({
    "act": st.sampled_from([None, "update", "remove"]),
    "timeout": st.one_of(st.none(), st.integers(0, 5)),
    "fire": st.booleans(),  # this call is for the key's fired timer
}), max_size=12)


@given(CALLS)
def test_one_timer_at_most_and_it_is_the_rows(calls):
    value, timers = _Value(), _Timers()
    for step in calls:
        fired = timers.registered[0] if step["fire"] and timers.registered else None
        keeps = step["act"] is None and value.row is not None  # a timeout alone needs state
        timeout = step["timeout"] if step["act"] == "update" or keeps else None
        call(value, timers, fired=fired, act=step["act"], timeout=timeout)
        recorded = None if value.row is None else value.row[-1]
        assert timers.registered == ([] if recorded is None else [recorded])
        if timeout is not None:  # armed as asked (1 ms later at the very time that fired)
            assert recorded == timeout + (timeout == fired)
        assert timers.warnings == [] and value.warnings == []
