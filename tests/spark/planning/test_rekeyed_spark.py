"""Re-keyed steps in one streaming query (Spark 4.0+): ``sw.stateful`` on the
output of another step, as a user writes one step, streams as the offline
``run_flow`` does, on both hosts."""

from __future__ import annotations

from dataclasses import replace

import pytest

import sparkwax as sw
from sparkwax.testing import Batch, Crash, replay, run_flow
from sparkwax.testing.reference import Accumulator
from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.testing.spark import run_plan_on_spark

from kit import (PassThrough, at, each_spark_host_with_buckets, per_key,
                 skip_unless_steps_follow, state_cli)

pytestmark = [pytest.mark.spark, pytest.mark.lines(since="4.0")]


@pytest.fixture(autouse=True)
def _a_line_that_chains(spark):
    skip_unless_steps_follow(spark)

INPUT = "key string, region string, ts timestamp, value long"
TIME = sw.EventTime("ts", watermark="2 minutes")


class FirstVisits(sw.StatefulLogic):
    """A user's first event per page (``value``); forgets the user 10
    minutes after their latest event (an event-time timer)."""

    def __init__(self, resume=None):
        self.seen, self.last = (set(resume[0]), resume[1]) if resume else (set(), None)

    def on_item(self, value):
        self.last = value["ts"] if self.last is None else max(self.last, value["ts"])
        if value["value"] in self.seen:
            return [], sw.RETAIN
        self.seen.add(value["value"])
        return [value], sw.RETAIN

    def notify_at(self):
        from datetime import timedelta
        return None if self.last is None else self.last + timedelta(minutes=10)

    def on_notify(self):
        return [], sw.DISCARD

    def snapshot(self):
        return (sorted(self.seen), self.last)


class Tally(sw.StatefulLogic):
    """Counts a region's first visits, emitting the count after each."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [(self.n,)], sw.RETAIN

    def snapshot(self):
        return self.n


def visit(user, region, minutes, page):
    return (user, {"region": region, "ts": at(minutes), "value": page})


SCRIPT = [
    Batch([visit("u1", "eu", 0, 1), visit("u1", "eu", 1, 1), visit("u2", "us", 1, 1),
           visit("u3", "eu", 2, 2)]),
    Crash(),
    Batch([visit("u1", "eu", 3, 2), visit("u2", "us", 4, 1), visit("u4", "us", 5, 9)]),
    Batch([visit("u1", "eu", 30, 1), visit("u3", "eu", 31, 2), visit("u5", "eu", 32, 5)]),
    Batch([visit("u1", "eu", 33, 1), visit("u6", "us", 34, 3)]),
]
FIRST = sw.Step.of(FirstVisits, step_id="visits", time=TIME,
                   output_schema="region string, ts timestamp, value long")


def by_region(user, emit):
    return emit["region"], {"ts": emit["ts"], "value": emit["value"]}




@pytest.mark.parametrize("second", ["tally", "accumulate"])
@each_spark_host_with_buckets
def test_two_steps_over_two_keys_stream_as_offline(spark, tmp_path, host, buckets, second):
    if second == "tally":
        then = sw.Step.of(Tally, step_id="tally", output_schema="n long")
    else:
        then = sw.Step.of(Accumulator, step_id="acc", time=TIME,
                          output_schema="kind string, a long, b long")
    offline = run_flow(SCRIPT, FIRST, by_region, then)

    def plan(stream):
        visits = sw.stateful(stream, key="key", step=FIRST, host=host, buckets=buckets)
        return sw.stateful(visits.select("region", "ts", "value"), key="region", step=then,
                           host=host, buckets=buckets)

    online = run_plan_on_spark(spark, plan, SCRIPT, input_schema=INPUT,
                               workdir=str(tmp_path), metrics_of=then.step_id)
    assert offline[0].metrics.timers_fired > 0  # users were forgotten
    assert per_key(online) == per_key(offline[1])
    assert replace(online.metrics, callback_us=0) == replace(offline[1].metrics, callback_us=0)
    # each step's state, read back by the state tools: Spark numbers the last step 0
    checkpoint = str(tmp_path / "checkpoint")
    for operator, steps in ((0, offline[1]), (1, offline[0])):
        state = {e.key: e.snapshot for e in read_entries(spark, checkpoint, operator_id=operator)}
        assert state == {key: _as_stored(value) for key, value in steps.snapshots.items()}


@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_a_chain_following_a_step_counts_each_stage_as_offline(spark, tmp_path, host):
    """A chained step on transformWithStateInPandas (the second step): its
    stages' counts in Spark's progress are the offline run's."""
    then = sw.Step.of(sw.chain(sw.Step.of(PassThrough, step_id="pass"),
                               sw.Step.of(Tally, step_id="tally")),
                      step_id="counts", output_schema="n long")
    offline = run_flow(SCRIPT, FIRST, by_region, then)[1]

    def plan(stream):
        visits = sw.stateful(stream, key="key", step=FIRST, host=host)
        return sw.stateful(visits.select("region", "ts", "value"), key="region", step=then,
                           host=host)

    online = run_plan_on_spark(spark, plan, SCRIPT, input_schema=INPUT,
                               workdir=str(tmp_path), metrics_of="counts")
    assert per_key(online) == per_key(offline)
    assert offline.stage_metrics["pass"].keys_created == 0  # it holds no state
    assert offline.stage_metrics["tally"].keys_created == 2  # eu, us
    assert {stage: m.deterministic() for stage, m in online.stage_metrics.items()} == \
        {stage: m.deterministic() for stage, m in offline.stage_metrics.items()}


def _as_stored(snapshot):
    return tuple(snapshot) if isinstance(snapshot, list) else snapshot


def test_the_state_tools_on_a_query_of_two_steps(spark, tmp_path, capsys):
    tally = sw.Step.of(Tally, step_id="tally", output_schema="n long")

    def plan(stream):
        visits = sw.stateful(stream, key="key", step=FIRST)
        return sw.stateful(visits.select("region", "ts", "value"), key="region", step=tally)

    run_plan_on_spark(spark, plan, SCRIPT[:1], input_schema=INPUT, workdir=str(tmp_path),
                      metrics_of="tally")
    checkpoint = str(tmp_path / "checkpoint")
    with pytest.raises(sw.RescaleError, match="its query runs 2 stateful steps"):
        sw.rescale(checkpoint, partitions=3)
    with pytest.raises(sw.ConfigError, match="runs 2 stateful steps .* finish ends one step: "
                                             "give operator_id="):
        sw.finish(checkpoint, step=tally)
    assert sorted(tuple(r) for r in sw.finish(checkpoint, step=tally, operator_id=0).collect()) \
        == []  # Tally has no on_eof
    with pytest.raises(sw.ConfigError, match="replay replays a one-step query"):
        replay(checkpoint, tally, key="region", source_format="json")
    assert state_cli(["show", checkpoint]) == 0
    shown = capsys.readouterr().out
    assert "'eu'" in shown and "--operator 1 shows the other" in shown
    assert state_cli(["show", checkpoint, "--operator", "1"]) == 0
    assert "'u1'" in capsys.readouterr().out
