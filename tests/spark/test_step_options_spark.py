"""The step options on the Spark entry points (``stateful``,
``stateful_batch``, ``connect``, ``join``, ``finish``, ``check_state``): a
wrong one is a ``ConfigError`` naming the step and the option, raised before
any Spark job; every one takes a ready Step (``step=``), and refuses a
builder or loose options beside it (tests/unit/core/test_step_options.py
covers the offline entry points)."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.engine.checkpoints.state.restore_check import check_state
from sparkwax.operators import Tagged, joiner
from sparkwax.testing import run_bounded
from sparkwax.testing.reference import Counter

INPUT = "key string, ts long, v string"
ROWS = [("a", 1, "x"), ("b", 2, "y"), ("a", 3, "z")]
JOBS = "sparkwax-step-options"


@pytest.fixture
def frame(spark):
    return spark.createDataFrame(ROWS, INPUT)


@pytest.fixture
def no_jobs(spark):
    """Fails the test if a Spark job ran inside it (the checks come first)."""
    context = spark.sparkContext
    context.setJobGroup(JOBS, "step options")
    yield
    ran = context.statusTracker().getJobIdsForGroup(JOBS)
    context.setLocalProperty("spark.jobGroup.id", None)
    assert ran == [], f"Spark jobs ran before the options were checked: {ran}"


def refused(call, **options) -> str:
    with pytest.raises(sw.ConfigError) as caught:
        call(**options)
    return str(caught.value)


BAD = [("order_by", 5, "order_by must name fields, got 5"),
       ("ttl", "x", "ttl: cannot read duration 'x'"),
       ("max_state_bytes", -1, "max_state_bytes must be a positive int (bytes), got -1"),
       ("max_state_bytes", True, "max_state_bytes must be a positive int (bytes), got True"),
       ("oder_by", "ts", "no step option 'oder_by'")]


@pytest.mark.parametrize("option, value, message", BAD)
def test_a_wrong_option_is_refused_on_every_spark_entry_point(spark, frame, tmp_path, no_jobs,
                                                              option, value, message):
    entry_points = {
        "stateful": lambda **o: sw.stateful(frame, key="key", builder=Counter,
                                            output_schema="n long", **o),
        "connect": lambda **o: sw.connect(frame, frame, key="key", builder=Counter,
                                          output_schema="n long", **o),
        "join": lambda **o: sw.join(frame, frame, key="key", **o),
        "finish": lambda **o: sw.finish(str(tmp_path), builder=Counter, output_schema="n long",
                                        spark=spark, **o),
        "check_state": lambda **o: check_state(spark, str(tmp_path), Counter, **o),
    }
    for name, call in entry_points.items():
        assert f"step 'x': {message}" in refused(call, step_id="x", **{option: value}), name
    if option != "ttl":  # a batch step takes no ttl= (refused, naming it, below)
        batch = refused(sw.stateful_batch, df=frame, key="key", builder=Counter,
                        output_schema="n long", step_id="x", **{option: value})
        assert f"step 'x': {message}" in batch


def test_options_an_entry_point_sets_itself_are_refused(frame, no_jobs):
    assert "step 'x': ttl= works for a StatefulLogic" in refused(
        sw.stateful_batch, df=frame, key="key", builder=Counter, output_schema="n long",
        step_id="x", ttl="1 hour")
    assert "step 'x': stateful_batch runs a StatefulBatchLogic" in refused(
        sw.stateful_batch, df=frame, key="key", builder=Counter, output_schema="n long",
        step_id="x", batch=False)
    assert "step 'x': sides= is not taken here: connect names its sides with names=" in \
        refused(lambda: sw.connect(frame, frame, key="key", builder=Counter, sides=["a", "b"],
                                   step_id="x"))
    assert "step 'x': output_schema= is not taken here: the join makes them" in refused(
        lambda: sw.join(frame, frame, key="key", output_schema="n long", step_id="x"))


STEP = sw.Step.of(Counter, step_id="counts", output_schema="n long", value="v")


def test_a_ready_step_and_a_builder_or_options_beside_it_are_refused(spark, frame, tmp_path,
                                                                    no_jobs):
    calls = {
        "stateful": lambda **o: sw.stateful(frame, key="key", **o),
        "stateful_batch": lambda **o: sw.stateful_batch(frame, key="key", **o),
        "connect": lambda **o: sw.connect(frame, frame, key="key", **o),
        "finish": lambda **o: sw.finish(str(tmp_path), spark=spark, **o),
    }
    for name, call in calls.items():
        assert refused(call, builder=Counter, step=STEP) == (
            "step 'counts': give a builder or a Step (step=), not both"), name
        assert "step 'counts': a Step carries its options; got ttl too" in refused(
            call, step=STEP, ttl="1 hour"), name
    assert "step 'counts': a Step carries its options; got ttl too" in refused(
        lambda: sw.join(frame, frame, key="key", step=STEP, ttl="1 hour"))
    assert "step 'counts': insert_mode= is the Step's joiner's" in refused(
        lambda: sw.join(frame, frame, key="key", step=STEP, insert_mode="first"))
    assert "step 'counts': a Step carries its options; got max_state_bytes too" in refused(
        lambda: check_state(spark, str(tmp_path), STEP, max_state_bytes=10))


def test_a_ready_step_runs_on_stateful_connect_and_join(spark, frame):
    counted = sw.stateful(frame, key="key", step=STEP)
    assert sorted((r.key, r.n) for r in counted.collect()) == [("a", 1), ("a", 2), ("b", 1)]

    names = ["left", "right"]
    joined_step = sw.Step.of(joiner(names, emit_mode="final"), step_id="pairs")
    offline = run_bounded(joined_step, [("a", Tagged("left", {"ts": 1, "v": "x"})),
                                        ("a", Tagged("right", {"ts": 2, "v": "y"}))])
    assert offline.by_key == {"a": [({"ts": 1, "v": "x"}, {"ts": 2, "v": "y"})]}
    left = spark.createDataFrame([("a", 1, "x")], INPUT)
    right = spark.createDataFrame([("a", 2, "y")], INPUT)
    joined = sw.join(left, right, key="key", step=joined_step)
    assert joined.columns == ["key", "left", "right"]
    assert [(r.key, r.left.v, r.right.v) for r in joined.collect()] == [("a", "x", "y")]
    with pytest.raises(sw.ConfigError, match="step 'pairs': names=\\['l', 'r'\\], but the "
                                             "Step's sides are \\['left', 'right'\\]"):
        sw.join(left, right, key="key", step=joined_step, names=["l", "r"])

    both = sw.Step.of(Counter, step_id="both", output_schema="n long")
    connected = sw.connect(left, right, key="key", step=both)
    assert sorted(r.n for r in connected.collect()) == [1, 2]
