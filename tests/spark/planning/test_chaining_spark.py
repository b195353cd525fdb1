"""A second stateful step on a stream is a ConfigError naming both steps, at
the call that adds it (Spark would refuse the query only at start, with its
plan); a bounded DataFrame takes several steps (Spark allows it there)."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.testing import run_bounded
from sparkwax.testing.reference import BatchCounter, Counter

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


@each_spark_host
def test_a_second_step_on_a_stream_names_both(spark, tmp_path, host):
    deduped = sw.stateful(users(spark, tmp_path), key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe", host=host)
    with pytest.raises(sw.ConfigError) as refused:
        sw.stateful(deduped.select("region"), key="region", builder=Counter,
                    output_schema="n long", step_id="regions", host=host)
    message = str(refused.value)
    assert message.startswith("step 'regions': its input stream already runs stateful "
                              "step 'dedupe'")
    assert "Multiple applyInPandasWithStates are not supported" in message
    assert "two queries" in message and "sw.chain(first, second)" in message


def test_a_join_after_a_step_and_a_step_after_a_plain_operator(spark, tmp_path):
    stream = users(spark, tmp_path)
    deduped = sw.stateful(stream, key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe")
    with pytest.raises(sw.ConfigError, match="already runs stateful step 'dedupe'"):
        sw.join(deduped, stream, key="user", step_id="both")

    def count(key, frames, state):  # a hand-written applyInPandasWithState
        yield from frames

    bare = stream.groupBy("user").applyInPandasWithState(
        count, "user string, region string", "n long", "append", "NoTimeout")
    with pytest.raises(sw.ConfigError, match="applyInPandasWithState that is not a sparkwax"):
        sw.stateful(bare, key="region", builder=Counter, output_schema="n long",
                    step_id="regions")


def test_connect_and_stateful_batch_after_a_step(spark, tmp_path):
    stream = users(spark, tmp_path)
    deduped = sw.stateful(stream, key="user", builder=FirstSeen,
                          output_schema="region string", step_id="dedupe")
    with pytest.raises(sw.ConfigError, match="'joined': its input stream already runs "
                                             "stateful step 'dedupe'"):
        sw.connect(deduped, stream, key="user", builder=Counter, output_schema="n long",
                   step_id="joined")
    with pytest.raises(sw.ConfigError, match="'batched': its input stream already runs "
                                             "stateful step 'dedupe'"):
        sw.stateful_batch(deduped, key="region", builder=BatchCounter, value="user",
                          output_schema="n long", step_id="batched")
    # one step on the stream is fine, and so is a second on another stream
    sw.stateful(stream, key="region", builder=Counter, value="user", output_schema="n long",
                step_id="alone")


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
