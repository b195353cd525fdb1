"""The cross-host cases (tests/cross_host.py) on every offline host, plus the
rules that hold the same on every host: null keys are refused, ``sw.now()`` is
None outside an activation, the metrics count the same rows."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.testing import Batch, Crash, Eof, Runner, check_logic, run, run_bounded

from sparkwax.testing.reference import Counter as Counted
from cross_host import (BAD_EMITS, BAD_TIMES, CASES, GOOD_EMITS, GOOD_ITEMS,
                        GOOD_SCHEMA, Emits, LockedAtEof, Tags, TimerOutsideSnapshot,
                        builder_holding_a_lock, row)

BY_NAME = pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])


@BY_NAME
@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_streaming_offline(case, restore):
    result = run(Tags, [Batch(case.items)], restore=restore, **case.options)
    assert result.by_key == case.expected
    assert result.late == result.metrics.rows_late == case.late
    assert result.metrics.rows_in == len(case.items)


@BY_NAME
def test_bounded_offline(case):
    result = run_bounded(Tags, case.items, **case.options)
    assert result.by_key == case.expected
    assert result.late == result.metrics.rows_late == case.late


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_a_null_key_is_refused_in_both_restore_modes(restore):
    with pytest.raises(sw.InputError, match="null or NaN key"):
        run(Tags, [Batch([row("a", "x")]), Crash(), Batch([(None, {"tag": "y"})])],
            restore=restore)
    with pytest.raises(sw.InputError, match="null or NaN key"):
        run_bounded(Tags, [(float("nan"), {"tag": "y"})])


def test_now_is_none_after_a_run_and_current_clock_inside():
    seen = []

    class Sees(Tags):
        def on_item(self, value):
            seen.append(sw.current_clock())
            return [], sw.RETAIN

    run(Sees, [Batch([row("a", "x")], now=sw.timers.from_epoch_ms(5_000))])
    assert seen == [sw.Clock(5_000, "processing")]
    assert sw.now() is None and sw.current_clock() is None


def test_a_callable_order_by_is_offline_only_and_its_errors_name_the_key():
    result = run(Tags, [Batch([row("a", "b", 2), row("a", "a", 1)])],
                 order_by=lambda value: value["seq"])
    assert result.by_key == {"a": ["a", "b"]}
    with pytest.raises(sw.InputError, match="key 'a'.*order_by"):
        run(Tags, [Batch([row("a", "b", 2), row("a", "a", 1)])],
            order_by=lambda value: value["missing"])


def test_incomparable_order_by_values_are_an_input_error():
    with pytest.raises(sw.InputError, match="order_by values cannot be compared"):
        run(Tags, [Batch([row("a", "b", 2), ("a", {"seq": "x", "tag": "c"})])], order_by="seq")


# --- every check runs on every offline entry point (the Step's) ---

OFFLINE_ENTRIES = {
    "run": lambda builder, **o: run(builder, [Batch([row("a", "x")])], **o),
    "run_on_crash": lambda builder, **o: run(builder, [Batch([row("a", "x")])],
                                             restore="on_crash", **o),
    "run_bounded": lambda builder, **o: run_bounded(builder, [row("a", "x")], **o),
    "Runner": lambda builder, **o: Runner(builder, **o),
    "check_logic": lambda builder, **o: check_logic(builder, max_examples=2, **o),
}
ENTRIES = pytest.mark.parametrize("entry", sorted(OFFLINE_ENTRIES))


@ENTRIES
@pytest.mark.parametrize("time", BAD_TIMES, ids=repr)
def test_a_bad_time_mode_is_refused_by_every_entry_point(entry, time):
    # run_bounded used to skip this check (Runner had it)
    with pytest.raises(sw.ConfigError, match="time must be ProcessingTime"):
        OFFLINE_ENTRIES[entry](Tags, time=time)


@ENTRIES
def test_a_builder_spark_could_not_ship_is_refused_by_every_entry_point(entry):
    with pytest.raises(sw.BuilderError, match="cannot be pickled"):
        OFFLINE_ENTRIES[entry](builder_holding_a_lock())


@pytest.mark.parametrize("how", ["streaming", "bounded"])
def test_an_unpicklable_snapshot_fails_in_bounded_mode_as_in_a_stream(how):
    # bounded mode used to commit nothing for a key that discards at EOF
    with pytest.raises(sw.SnapshotError, match="cannot be pickled") as info:
        if how == "streaming":
            run(LockedAtEof, [Batch([row("a", "x")]), Eof()])
        else:
            run_bounded(LockedAtEof, [row("a", "x")])
    assert info.value.key == "a"


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_eof_after_a_restore_warns_of_lost_state_offline(restore):
    script = [Batch([row("a", "x")]), Crash(), Eof()]
    with pytest.warns(sw.LostStateWarning):
        result = run(TimerOutsideSnapshot, script, restore=restore,
                     time=sw.EventTime("ts"))
    assert result.by_key == {"a": [1]}


# --- output schemas: the Spark hosts' checker, offline (issue 21) ---

EMIT_CASES = pytest.mark.parametrize("case", BAD_EMITS, ids=[case.name for case in BAD_EMITS])
OFFLINE_HOSTS = {
    "run": lambda case: run(Emits, [Batch(case.items())], output_schema=case.schema,
                            step_id="emits"),
    "run_on_crash": lambda case: run(Emits, [Batch(case.items())], output_schema=case.schema,
                                     step_id="emits", restore="on_crash"),
    "run_bounded": lambda case: run_bounded(Emits, case.items(), output_schema=case.schema,
                                            step_id="emits"),
    "Runner": lambda case: Runner(Emits, output_schema=case.schema,
                                  step_id="emits").batch(case.items()),
}


@EMIT_CASES
@pytest.mark.parametrize("host", sorted(OFFLINE_HOSTS))
def test_a_bad_emit_is_the_same_schema_error_on_every_offline_host(case, host):
    with pytest.raises(sw.SchemaError) as caught:
        OFFLINE_HOSTS[host](case)
    error = caught.value
    assert (error.step_id, error.key, error.field, repr(error.value)) == (
        "emits", "b", case.field, repr(case.value))
    where = "output" if case.field is None else f"output field {case.field!r}"
    assert str(error).startswith(f"step 'emits', key 'b', {where}: ")


@EMIT_CASES
def test_without_an_output_schema_offline_emits_are_not_checked(case):
    result = run(Emits, [Batch(case.items())])
    assert result.by_key["b"][-1] is case.bad


def test_good_emits_of_every_type_pass_offline_as_they_are():
    for result in (run(Emits, [Batch(GOOD_ITEMS)], output_schema=GOOD_SCHEMA),
                   run_bounded(Emits, GOOD_ITEMS, output_schema=GOOD_SCHEMA)):
        assert result.by_key == {key: [emit, emit] for key, emit in GOOD_EMITS.items()}


def test_a_failing_activation_commits_nothing_offline():
    # as on Spark, where the micro-batch fails and the checkpoint keeps the last commit
    runner = Runner(Counted, output_schema="n tinyint", step_id="count")
    runner.batch([("a", {})] * 127)
    with pytest.raises(sw.SchemaError, match="out of range for tinyint"):
        runner.batch([("a", {})])
    assert runner.driver.decode("a", runner.blobs["a"]) == 127


def test_check_logic_checks_emits_against_the_output_schema():
    with pytest.raises(sw.SchemaError, match="output field 'n': does not fit string"):
        check_logic(Counted, output_schema="n string", max_examples=5)
    check_logic(Counted, output_schema="n long", max_examples=5)
    with pytest.raises(sw.ConfigError, match="step 'stateful:Counter': output_schema: cannot parse"):
        check_logic(Counted, output_schema="n lng", max_examples=5)


def test_a_step_carries_its_output_schema_to_the_offline_runner():
    step = sw.Step.of(Counted, step_id="count", output_schema="n tinyint")
    with pytest.raises(sw.SchemaError, match="key 'a'"):
        run(step, [Batch([("a", {})] * 128)])
    with pytest.raises(sw.ConfigError, match="a Step carries its options; got output_schema"):
        run(step, [], output_schema="n long")
