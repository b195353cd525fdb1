"""The step options are declared once (``sparkwax.StepOptions``) and taken by
every entry point; a wrong one is a ``ConfigError`` naming the step and the
option on every offline entry point (the Spark ones: tests/spark/planning/test_step_spark.py),
checked in one place, the Step's own validation."""

from __future__ import annotations

import ast
import dataclasses
import sys
from typing import Any, Callable, Dict

import pytest

import sparkwax as sw
from sparkwax.step import OPTIONS, RESTORE_MODES, Step, StepOptions, as_step
from sparkwax.testing import Runner, check_logic, replay, run, run_bounded
from sparkwax.testing.reference import Counter

from kit import PACKAGE

BAD = [  # (option, value, what the error says after "step 'x': ")
    ("order_by", 5, "order_by must name fields, got 5"),
    ("order_by", "", "order_by must name fields, got ''"),
    ("order_by", [1], "order_by must name fields, got [1]"),
    ("order_by", {"ts"}, "order_by must name fields, got {'ts'}"),
    ("ttl", "x", "ttl: cannot read duration 'x'"),
    ("ttl", 5, "ttl: a duration must be a string or timedelta, got 5"),
    ("max_state_bytes", -1, "max_state_bytes must be a positive int (bytes), got -1"),
    ("max_state_bytes", True, "max_state_bytes must be a positive int (bytes), got True"),
    ("max_state_bytes", "10", "max_state_bytes must be a positive int (bytes), got '10'"),
    ("value", 3, "value must name one column, got 3"),
    ("value", "", "value must name one column, got ''"),
    ("output_schema", 3, "output_schema must be a DDL string or a StructType, got 3"),
    ("output_schema", " ", "output_schema must not be empty"),
    ("sides", 5, "sides must be a list of side names, got 5"),
    ("sides", "ab", "sides must be a list of side names, got 'ab'"),
    ("sides", ["a", "a"], "sides: sides must be distinct side names"),
    ("time", "event", "time must be ProcessingTime() or EventTime(...), got 'event'"),
    ("batch", "yes", "batch must be a bool, got 'yes'"),
]
UNKNOWN = ("oder_by", "ts", "no step option 'oder_by'; the options are step_id, time, batch")

ENTRY_POINTS: Dict[str, Callable[..., Any]] = {
    "Step.of": lambda **o: Step.of(Counter, step_id="x", **o),
    "as_step": lambda **o: as_step(Counter, step_id="x", **o),
    "run": lambda **o: run(Counter, [], step_id="x", **o),
    "run_bounded": lambda **o: run_bounded(Counter, [], step_id="x", **o),
    "Runner": lambda **o: Runner(Counter, step_id="x", **o),
    "check_logic": lambda **o: check_logic(Counter, max_examples=1, step_id="x", **o),
    "replay": lambda **o: replay("/no/such/checkpoint", Counter, key="k", source_format="json",
                                 step_id="x", **o),
}


def refused(call: Callable[..., Any], **options: Any) -> str:
    with pytest.raises(sw.ConfigError) as caught:
        call(**options)
    return str(caught.value)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("option, value, message", [*BAD, UNKNOWN])
def test_a_wrong_option_is_a_config_error_naming_the_step_and_the_option(entry, option, value,
                                                                          message):
    spark_loaded = "pyspark" in sys.modules
    assert f"step 'x': {message}" in refused(ENTRY_POINTS[entry], **{option: value})
    assert spark_loaded or "pyspark" not in sys.modules  # replay: checked before pyspark


@pytest.mark.parametrize("option, value, message", BAD)
def test_the_step_itself_refuses_a_wrong_field(option, value, message):
    """One place: the constructor (and every copy) checks what Step.of hands it."""
    assert f"step 'x': {message}" in refused(Step, builder=Counter, step_id="x",
                                             **{option: value})
    assert f"step 'x': {message}" in refused(Step(builder=Counter, step_id="x").but,
                                             **{option: value})


@pytest.mark.parametrize("entry", ["Runner", "run", "replay"])
def test_restore_is_one_of_its_modes_naming_the_step(entry):
    assert RESTORE_MODES == ("always", "on_crash")
    message = refused(ENTRY_POINTS[entry], restore="bogus")
    assert "step 'x': restore must be one of ('always', 'on_crash'), got 'bogus'" in message


STEP = Step.of(Counter, step_id="counts")


@pytest.mark.parametrize("entry", [
    lambda **o: run(STEP, [], **o), lambda **o: run_bounded(STEP, [], **o),
    lambda **o: Runner(STEP, **o), lambda **o: check_logic(STEP, max_examples=1, **o),
    lambda **o: replay("/no/such/checkpoint", STEP, key="k", source_format="json", **o),
])
def test_a_step_and_loose_options_at_once_are_refused(entry):
    message = refused(entry, ttl="1 hour")
    assert message == ("step 'counts': a Step carries its options; got ttl too "
                       "(use step.but(ttl=...))")
    assert "step 'counts': no step option 'tll'" in refused(entry, tll="1 hour")
    assert "step 'counts' is a StatefulLogic step (batch=False)" in refused(entry, batch=True)


def test_a_builder_and_a_step_at_once_are_refused():
    assert refused(as_step, builder=Counter, step=STEP) == (
        "step 'counts': give a builder or a Step (step=), not both")
    assert "give the step's builder" in refused(as_step)
    assert "step= must be a sparkwax.Step" in refused(as_step, step=Counter)


def test_the_options_are_the_steps_fields_and_none_means_the_default():
    fields = [f.name for f in dataclasses.fields(Step)]
    assert OPTIONS == tuple(StepOptions.__annotations__) == (
        "step_id", "time", "batch", "order_by", "value", "ttl", "max_state_bytes", "sides",
        "output_schema")
    assert set(OPTIONS) == set(fields) - {"builder", "two_clocks"}
    assert sw.StepOptions is StepOptions
    unset: StepOptions = {name: None for name in OPTIONS}  # type: ignore[misc]
    assert Step.of(Counter, **unset) == Step.of(Counter)


# Every entry point and where it lives: each takes the options as
# ``**options: Unpack[StepOptions]`` and declares none of them itself (read from
# the source, so the Spark entry points are checked without pyspark).
ENTRY_SOURCES = {
    "engine/planning/plan.py": ["stateful", "stateful_batch"],
    "engine/planning/connecting.py": ["connect"],
    "frames.py": ["join"],
    "engine/checkpoints/finish.py": ["finish"],
    "engine/checkpoints/state/restore_check.py": ["check_state"],
    "testing/runner.py": ["run", "Runner.__init__"],
    "testing/bounded.py": ["run_bounded"],
    "testing/strategies/logic_check.py": ["check_logic"],
    "testing/checkpoint_replay.py": ["replay"],
    "testing/spark.py": ["run_script_on_spark"],  # the Spark test harness
    "step.py": ["Step.of", "as_step"],
}


def _functions(path: str) -> Dict[str, ast.FunctionDef]:
    tree = ast.parse((PACKAGE / path).read_text())
    found: Dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{item.name}": item for item in node.body
                          if isinstance(item, ast.FunctionDef)})
    return found


@pytest.mark.parametrize("path, name", [(path, name) for path, names in ENTRY_SOURCES.items()
                                        for name in names])
def test_every_entry_point_takes_the_one_list_of_options(path, name):
    function = _functions(path)[name]
    arguments = function.args
    declared = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    assert not declared & set(OPTIONS), f"{name} declares step options itself"
    assert arguments.kwarg is not None and arguments.kwarg.arg == "options"
    assert ast.unparse(arguments.kwarg.annotation) == "Unpack[StepOptions]"
    if name not in ("Step.of", "as_step", "run", "run_bounded", "check_logic", "replay",
                    "Runner.__init__", "check_state", "run_script_on_spark"):
        assert "step" in declared, f"{name} takes no ready Step (step=)"
    if name not in ("Step.of", "as_step", "Runner.__init__"):  # the class's, the module's
        assert "docs/guide.md" in (ast.get_docstring(function) or ""), f"{name}: no table"
