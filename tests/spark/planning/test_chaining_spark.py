"""A second stateful step on a stream: from Spark 4.0 it follows the first in
the same query (tests/spark/planning/test_rekeyed_spark.py runs them);
where it cannot (3.5, after a plain applyInPandasWithState, both timer
kinds) it is a ConfigError naming both steps, at the call that adds it
(Spark would refuse the query only at start, with its plan). A bounded
DataFrame takes several steps on every line."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.testing import run_bounded
from sparkwax.engine.planning.chaining import holds_following_step
from sparkwax.engine.spark_version import has_transform_with_state
from sparkwax.testing.reference import BatchCounter, Counter, IdleAlarm

from kit import each_spark_host

pytestmark = [pytest.mark.spark, pytest.mark.lines]

EVENTS = [("u1", "eu"), ("u2", "eu"), ("u1", "eu"), ("u3", "us")]


class FirstSeen(sw.StatefulLogic):
    """A dedupe: a user's region, the first time the user is seen."""

    def __init__(self, resume=None):
        self.seen = bool(resume)

    def on_item(self, value):
        if self.seen:
            return [], sw.RETAIN
        self.seen = True
        return [value["region"]], sw.RETAIN

    def snapshot(self):
        return self.seen


def users(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "0.json").write_text("".join(
        f'{{"user": "{user}", "region": "{region}"}}\n' for user, region in EVENTS))
    return spark.readStream.schema("user string, region string").json(str(folder))


def users_ts(spark, tmp_path):
    folder = tmp_path / "in_ts"
    folder.mkdir()
    (folder / "0.json").write_text('{"user": "u1", "region": "eu", "ts": "2024-01-01T00:00:00"}\n')
    return spark.readStream.schema("user string, region string, ts timestamp").json(str(folder))


def refused_on_this_line(spark, call, step_id, first):
    """On a line without transformWithStateInPandas (3.5) ``call()`` is a
    ConfigError naming both steps and the line; from 4.0 it plans the step
    after the other, in the same query."""
    if has_transform_with_state(spark):
        assert holds_following_step(str(call()._jdf.queryExecution().logical().toString()))
        return
    with pytest.raises(sw.ConfigError) as refused:
        call()
    message = str(refused.value)
    assert message.startswith(f"step {step_id!r}: its input stream already runs stateful "
                              f"step {first!r}, and on Spark 3.5 a streaming query runs one "
                              "applyInPandasWithState and nothing stateful after it")
    assert "two queries" in message and "sw.chain(first, second)" in message


@each_spark_host
def test_a_second_step_on_a_stream_follows_or_names_both(spark, tmp_path, host):
    deduped = sw.stateful(users(spark, tmp_path), key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe", host=host)
    refused_on_this_line(spark, lambda: sw.stateful(
        deduped.select("region", "user"), key="region", builder=Counter, output_schema="n long",
        step_id="regions", host=host), "regions", "dedupe")


def test_a_join_after_a_step_and_a_step_after_a_plain_operator(spark, tmp_path):
    stream = users(spark, tmp_path)
    deduped = sw.stateful(stream, key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe")
    refused_on_this_line(spark, lambda: sw.join(deduped, stream, key="user", step_id="both"),
                         "both", "dedupe")

    def count(key, frames, state):  # a hand-written applyInPandasWithState
        yield from frames

    bare = stream.groupBy("user").applyInPandasWithState(
        count, "user string, region string", "n long", "append", "NoTimeout")
    with pytest.raises(sw.ConfigError) as refused:
        sw.stateful(bare, key="region", builder=Counter, output_schema="n long",
                    step_id="regions")
    assert str(refused.value).startswith(
        "step 'regions': its input stream already runs an applyInPandasWithState that is "
        "not a sparkwax step, and Spark runs one applyInPandasWithState per streaming query")


def test_connect_and_stateful_batch_after_a_step(spark, tmp_path):
    stream = users(spark, tmp_path)
    deduped = sw.stateful(stream, key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe")
    refused_on_this_line(spark, lambda: sw.connect(
        deduped, stream, key="user", builder=Counter, output_schema="n long",
        step_id="joined"), "joined", "dedupe")
    refused_on_this_line(spark, lambda: sw.stateful_batch(
        deduped, key="region", builder=BatchCounter, value="user", output_schema="n long",
        step_id="batched"), "batched", "dedupe")
    # one step on the stream is fine, and so is a second on another stream
    sw.stateful(stream, key="region", builder=Counter, value="user", output_schema="n long",
                step_id="alone")


def test_a_step_with_both_timer_kinds_after_a_step_is_refused(spark, tmp_path):
    stream = users_ts(spark, tmp_path)
    deduped = sw.stateful(stream, key="user", builder=FirstSeen,
                          output_schema="region string, ts timestamp", step_id="dedupe")
    with pytest.raises(sw.ConfigError) as refused:
        sw.stateful(deduped.select("region", "ts"), key="region", builder=IdleAlarm,
                    time=sw.EventTime("ts"), output_schema="kind string, n long",
                    step_id="alarms")
    assert "its input stream already runs stateful step 'dedupe'" in str(refused.value)
    if has_transform_with_state(spark):
        assert "a step with both timer kinds (notify_at and processing_notify_at)" in \
            str(refused.value)


@each_spark_host
def test_a_bounded_frame_takes_two_steps(spark, host):
    frame = spark.createDataFrame(EVENTS, "user string, region string")
    deduped = sw.stateful(frame, key="user", builder=FirstSeen, output_schema="region string",
                          step_id="dedupe", host=host)
    counted = sw.stateful(deduped, key="region", builder=Counter, value="user",
                          output_schema="n long", step_id="regions", host=host)
    got = sorted((row["region"], row["n"]) for row in counted.collect())
    first = run_bounded(FirstSeen, [(user, {"region": region}) for user, region in EVENTS])
    offline = run_bounded(Counter, [(region, region) for _, region in first.outputs])
    assert got == sorted(offline.outputs) == [("eu", 1), ("eu", 2), ("us", 1)]
