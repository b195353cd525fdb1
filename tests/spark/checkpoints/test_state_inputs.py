"""Bad inputs to the state tools are named sparkwax errors that say what was
wrong and what to give instead, not Spark's tracebacks nor a silent exit:
a batch past the last commit or negative, an operator the query lacks, a
plain Spark query's checkpoint (a groupBy().count()), rescale --finish with
nothing to finish (``sparkwax.engine.checkpoints.state.asked``)."""

import pytest

import sparkwax as sw
from sparkwax.testing import Batch
from sparkwax.testing.spark import run_script_on_spark

import kit
from kit import Count, item, state_cli

INPUT = "key string, ts timestamp, value long"


@pytest.fixture(scope="module")
def checkpoints(spark, tmp_path_factory):
    """A sparkwax step's checkpoint (batches 0 and 1) and a plain Spark
    aggregation's (one batch)."""
    step = tmp_path_factory.mktemp("step")
    run_script_on_spark(spark, Count, [Batch([item("a", 0, 1)]), Batch([item("b", 1, 2)])],
                        input_schema=INPUT, output_schema="n long",
                        time=sw.EventTime("ts", watermark="2 minutes"), workdir=str(step),
                        step_id="count")
    plain = tmp_path_factory.mktemp("plain")
    (plain / "in").mkdir()
    (plain / "in" / "1.json").write_text('{"k": "a"}\n{"k": "b"}\n')
    query = spark.readStream.schema("k string").json(str(plain / "in")).groupBy("k").count() \
        .writeStream.format("noop").outputMode("update") \
        .option("checkpointLocation", str(plain / "ck")).trigger(availableNow=True).start()
    query.awaitTermination()
    return str(step / "checkpoint"), str(plain / "ck")


@pytest.mark.parametrize("options, message", [
    ({"batch_id": 99}, "batch_id=99 is past the last committed micro-batch of {ck} (1): give "
                       "one from 0 to 1, the batches its commit log holds"),
    ({"batch_id": -1}, "batch_id= takes a committed micro-batch's id, a whole number from 0; "
                       "got -1"),
    ({"batch_id": 1.5}, "batch_id= takes a committed micro-batch's id, a whole number from 0; "
                        "got 1.5"),
    ({"operator_id": 3}, "{ck} has no state for operator 3: its one stateful operator is 0 "
                         "(give --operator / operator_id= one of them)"),
])
def test_read_state_names_a_bad_batch_or_operator(spark, checkpoints, options, message):
    checkpoint = checkpoints[0]
    with pytest.raises(sw.ConfigError) as raised:
        sw.read_state(spark, checkpoint, **options)
    assert str(raised.value).startswith(message.format(ck=checkpoint)), str(raised.value)
    assert sw.read_state(spark, checkpoint, batch_id=0).count() == 1  # the range holds


def test_a_plain_spark_query_is_not_a_sparkwax_step(spark, checkpoints, capsys):
    plain = checkpoints[1]
    said = (f"{plain}: operator 0 is not a sparkwax step's state: it holds the state of a "
            f"streaming aggregation (groupBy(...).agg / count) (Spark's 'stateStoreSave' "
            f"operator)")
    from sparkwax.engine.checkpoints.state.restore_check import check_state

    for call in (lambda: sw.read_state(spark, plain), lambda: sw.rescale(plain, 3, spark=spark),
                 lambda: check_state(spark, plain, kit.SumV1)):  # the Python API too
        with pytest.raises(sw.ConfigError) as raised:
            call()
        assert str(raised.value).startswith(said), str(raised.value)
    for argv in (["show", plain], ["check", plain, "kit:SumV1"],
                 ["rescale", plain, "--partitions", "3"]):
        assert state_cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"sparkwax state: {said}"), err
        assert "time mode" not in err, err


def test_rescale_finish_with_nothing_to_finish_says_so(spark, checkpoints, capsys):
    assert state_cli(["rescale", checkpoints[0], "--finish"]) == 0
    assert capsys.readouterr().out == (f"nothing to finish: no interrupted rescale in "
                                       f"{checkpoints[0]} (the checkpoint is unchanged)\n")


def test_a_checkpoint_without_a_commit_and_a_missing_key_are_named(spark, checkpoints, tmp_path,
                                                                 capsys):
    (tmp_path / "offsets").mkdir()  # a query that never committed a micro-batch
    (tmp_path / "commits").mkdir()
    with pytest.raises(sw.ConfigError, match="no micro-batch of its query has committed yet"):
        sw.read_state(spark, str(tmp_path))
    assert state_cli(["show", str(tmp_path)]) == 2
    assert "no micro-batch of its query has committed yet" in capsys.readouterr().err
    assert state_cli(["show", checkpoints[0], "--key", "zzz"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"sparkwax state: no key 'zzz' in the state of {checkpoints[0]} "
                            f"(2 live keys; --key matches the first key column, the text cast "
                            f"to its type)\n")
    assert captured.out == ""
