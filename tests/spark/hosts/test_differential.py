"""Differential tests: the offline runner and a real streaming query agree per key."""

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax.testing.spark import run_script_on_spark
from sparkwax.testing import Batch, Crash, run, run_bounded
from sparkwax.testing.reference import Accumulator, BatchCounter, SessionTracker
from sparkwax.testing.strategies import micro_batches, timestamped_items

from kit import at as _t, each_spark_host_with_buckets as HOSTS, per_key as _per_key

INPUT = "key string, ts timestamp, value long"
ACC_OUT = "kind string, a long, b long"
SESSION_OUT = "start timestamp, `end` timestamp, events long"
TIME = sw.EventTime("ts", watermark="2 minutes")

# Unique event times per key keep the order defined after Spark's shuffle.
items = timestamped_items(keys=st.sampled_from(["a", "b", "c"]), min_size=1, max_size=14,
                          steps=st.integers(1, 400).map(lambda s: timedelta(seconds=s)))


@st.composite
def event_scripts(draw, max_batches=4):
    batches = draw(micro_batches(items=items, max_batches=max_batches))
    crash_at = draw(st.sets(st.integers(1, max(len(batches) - 1, 1)), max_size=1))
    script = []
    for position, batch in enumerate(batches):
        if position in crash_at:
            script.append(Crash())
        script.append(Batch(batch))
    return script


def _offline_as_rows(result, fields):
    return {k: [tuple(v[f] for f in fields) if isinstance(v, dict) else tuple(v) for v in vs]
            for k, vs in result.by_key.items()}


@HOSTS
@settings(settings.get_profile("spark"))
@given(script=event_scripts())
def test_streaming_matches_offline_accumulator(spark, tmp_path_factory, host, buckets, script):
    offline = run(Accumulator, script, time=TIME)
    online = run_script_on_spark(spark, Accumulator, script, input_schema=INPUT,
                                 output_schema=ACC_OUT, time=TIME, host=host, buckets=buckets,
                                 workdir=str(tmp_path_factory.mktemp("acc")))
    assert _per_key(online) == _per_key(offline)


@HOSTS
@settings(settings.get_profile("spark"))
@given(script=event_scripts())
def test_streaming_matches_offline_sessions(spark, tmp_path_factory, host, buckets, script):
    offline = run(SessionTracker, script, time=sw.EventTime("ts"))
    online = run_script_on_spark(spark, SessionTracker, script, input_schema=INPUT,
                                 output_schema=SESSION_OUT, time=sw.EventTime("ts"),
                                 host=host, buckets=buckets,
                                 workdir=str(tmp_path_factory.mktemp("sessions")))
    assert _per_key(online) == _offline_as_rows(offline, ["start", "end", "events"])


@HOSTS
def test_streaming_batch_logic_matches_offline(spark, tmp_path, host, buckets):
    script = [Batch([("a", {"ts": _t(1), "value": 1}), ("a", {"ts": _t(2), "value": 2}),
                     ("b", {"ts": _t(3), "value": 3})]),
              Crash(),
              Batch([("a", {"ts": _t(4), "value": 4})])]
    offline = run(BatchCounter, script, batch=True, time=TIME)
    online = run_script_on_spark(spark, BatchCounter, script, input_schema=INPUT,
                                 output_schema="n long", time=TIME, batch=True, host=host,
                                 buckets=buckets, workdir=str(tmp_path))
    assert offline.by_key == {"a": [2, 3], "b": [1]}
    assert _per_key(online) == {k: [(v,) for v in vs] for k, vs in offline.by_key.items()}


@pytest.mark.parametrize("host, buckets", [("per_key", None), ("packed", 1), ("packed", 64)])
def test_a_due_key_without_data_is_woken(spark, tmp_path, host, buckets):
    """"a" never gets data again; its timer must still fire, whether its bucket
    has other keys with data (1 bucket) or only Spark's bucket timeout wakes it
    (64 buckets: "a" alone in its bucket)."""
    script = [Batch([("a", {"ts": _t(0), "value": 1})]),
              Batch([("b", {"ts": _t(10), "value": 2})]),
              Batch([("c", {"ts": _t(20), "value": 3})])]
    offline = run(Accumulator, script, time=TIME)
    online = run_script_on_spark(spark, Accumulator, script, input_schema=INPUT,
                                 output_schema=ACC_OUT, time=TIME, host=host, buckets=buckets,
                                 workdir=str(tmp_path))
    assert offline.by_key["a"] == [("item", 1, 1), ("notify", 1, 1)]
    assert _per_key(online) == _per_key(offline)


@HOSTS
@settings(settings.get_profile("spark"))
@given(items=items)
def test_bounded_matches_offline(spark, host, buckets, items):
    rows = [(k, v["ts"], v["value"]) for k, v in items]
    frame = spark.createDataFrame(rows, INPUT)
    online = sw.stateful(frame, key="key", builder=Accumulator, output_schema=ACC_OUT,
                         time=TIME, host=host, buckets=buckets).collect()
    offline = run_bounded(Accumulator, items, time=TIME)
    got = {}
    for row in online:  # one key's rows come from one group, in emission order
        got.setdefault(row[0], []).append(tuple(row[1:]))
    assert got == _per_key(offline)
