"""A Step is valid by construction: ``Step(...)``, ``Step.of`` and every copy
(``step.but``) are checked, and one Step runs on every offline entry point
under one step id (the default ``stateful:<builder name>`` everywhere)."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.step import HOSTS, Step, as_step, default_step_id
from sparkwax.testing import Batch, Runner, check_logic, run, run_bounded
from sparkwax.testing.reference import Counter

from kit import Fussy


STEP = Step.of(Fussy, output_schema="n long")


@pytest.mark.parametrize("changes, message", [
    ({"time": "processing"}, "step 'x': time must be ProcessingTime() or EventTime(...), "
                             "got 'processing'"),
    ({"time": sw.EventTime}, "step 'x': time must be ProcessingTime()"),
    ({"max_state_bytes": -5}, "step 'x': max_state_bytes must be a positive int (bytes), "
                              "got -5"),
    ({"max_state_bytes": 0}, "max_state_bytes must be a positive int (bytes), got 0"),
    ({"max_state_bytes": True}, "max_state_bytes must be a positive int (bytes), got True"),
    ({"batch": "yes"}, "step 'x': batch must be a bool, got 'yes'"),
    ({"order_by": [1]}, "step 'x': order_by must name fields, got [1]"),
    ({"ttl": 5}, "step 'x': ttl: a duration must be a string or timedelta, got 5"),
    ({"value": 3}, "step 'x': value must name one column, got 3"),
    ({"output_schema": 3}, "step 'x': output_schema must be a DDL string or a StructType, "
                           "got 3"),
    ({"step_id": ""}, "step_id must be a non-empty string, got ''"),
])
def test_a_wrong_field_is_refused_by_the_constructor_and_by_every_copy(changes, message):
    fields = {"step_id": "x", **changes}
    with pytest.raises(sw.ConfigError) as built:
        Step(builder=Counter, **fields)
    assert message in str(built.value)
    with pytest.raises(sw.ConfigError) as copied:
        Step(builder=Counter, step_id="x").but(**changes)
    assert message in str(copied.value)


def test_a_builder_that_is_not_callable_is_refused_by_the_constructor():
    with pytest.raises(sw.BuilderError, match="builder is not callable"):
        Step(builder=42, step_id="x")  # type: ignore[arg-type]
    with pytest.raises(sw.ConfigError, match="builder must be a builder, it is a Step"):
        Step(builder=STEP, step_id="x")  # type: ignore[arg-type]


def test_the_constructor_converts_the_short_forms_as_step_of_does():
    made = Step(builder=Counter, step_id="x",
                order_by="ts",  # type: ignore[arg-type]
                ttl="1 hour",  # type: ignore[arg-type]
                sides=["a", "b"])  # type: ignore[arg-type]
    assert made.order_by == ("ts",) and made.ttl == sw.step.Ttl("1 hour")
    assert made.sides is not None and made.sides.names == ("a", "b")
    assert made == Step.of(Counter, step_id="x", order_by=["ts"], ttl="1 hour",
                           sides=["a", "b"])
    assert made.but(step_id="y").order_by == ("ts",)


def test_a_copy_is_checked_against_the_other_fields():
    step = Step.of(Counter, ttl="1 hour")
    with pytest.raises(sw.ConfigError, match="ttl= works for a StatefulLogic"):
        step.but(batch=True)
    with pytest.raises(sw.ConfigError, match="with value='v' the logic gets that column"):
        step.but(time=sw.EventTime("ts"), value="v")


def test_one_default_step_id_rule():
    assert default_step_id(Counter) == "stateful:Counter"
    assert Step.of(Counter).step_id == Step.of(Counter, batch=True).step_id == "stateful:Counter"
    assert Runner(Counter).step_id == "stateful:Counter"
    assert run(Counter, []).step_id == run_bounded(Counter, []).step_id == "stateful:Counter"
    assert HOSTS == ("per_key", "packed")


def test_as_step_takes_a_step_without_options():
    assert as_step(STEP) is STEP
    with pytest.raises(sw.ConfigError, match="a Step carries its options; got step_id, ttl too"):
        as_step(STEP, ttl="1 hour", step_id="other")
    with pytest.raises(sw.ConfigError, match="is a StatefulLogic step"):
        as_step(STEP, batch=True)


GOOD = [("a", "x"), ("b", "y"), ("a", "z")]


def test_one_step_runs_offline_under_one_step_id_in_metrics_and_errors():
    streamed, bounded = run(STEP, [Batch(GOOD)]), run_bounded(STEP, GOOD)
    for result in (streamed, bounded):
        assert result.step_id == STEP.step_id == "stateful:Fussy"
        assert result.by_key == {"a": [1, 2], "b": [1]}
        assert result.metrics.rows_in == 3 and result.metrics.emits == 3
    check_logic(STEP, max_examples=5)
    failures = []
    for attempt in (lambda: run(STEP, [Batch([("a", "boom")])]),
                    lambda: run_bounded(STEP, [("a", "boom")])):
        with pytest.raises(sw.CallbackError) as caught:
            attempt()
        failures.append(caught.value)
    for error in failures:
        assert (error.step_id, error.key, error.callback) == (STEP.step_id, "a", "on_item")
        assert str(error).startswith("step 'stateful:Fussy', key 'a', on_item")
