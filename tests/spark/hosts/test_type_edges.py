"""Where Spark's types end (issue 32), on Spark: timestamps beyond pandas'
nanoseconds and lone surrogates are the offline ``SchemaError`` on every host
(bounded, per_key, packed, finish); timestamps are carried exactly to the
microsecond both ways; a builder that refuses ``None`` is named at plan time
without a key. The bad-emit matrix of ``tests/cross_host.py`` (its
``timestamp_*`` and ``lone_surrogate*`` cases) runs on both hosts in
``test_cross_host_spark.py``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

import sparkwax as sw
from sparkwax.schema import TIMESTAMP_HIGH, TIMESTAMP_LOW
from sparkwax.testing import Batch, run
from sparkwax.testing.spark import run_script_on_spark

UTC = timezone.utc
HOSTS = pytest.mark.parametrize("host, buckets", [("per_key", None), ("packed", 2)])
# odd microseconds beyond 2**53 µs from 1970 (a float64 rounds them), and
# Spark's own ends of a timestamp (year 1 and 9999: beyond pandas' nanoseconds)
EXACT = [datetime(2260, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
         datetime(1677, 9, 21, 0, 12, 43, 145225, tzinfo=UTC),
         datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC),
         datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC)]


class Seen(sw.StatefulLogic):
    """Emits, per row, the timestamp the logic was handed (as text, so any
    datetime fits) and, when it fits an output timestamp, the value itself."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        at = value["at"]
        fits = at is not None and TIMESTAMP_LOW <= at <= TIMESTAMP_HIGH
        return [(value["seq"], None if at is None else at.isoformat(),
                 at if fits else None)], sw.RETAIN

    def snapshot(self):
        return None


@HOSTS
@pytest.mark.parametrize("event_time", [False, True], ids=["column", "event_time"])
def test_input_timestamps_reach_the_logic_exactly_beside_a_null(spark, host, buckets,
                                                                 event_time):
    # a null in the group made the µs column a float column: beyond 2**53 µs
    # the microseconds were lost on the way in (and on the way out, floats again)
    rows = [("k", seq, at) for seq, at in enumerate(EXACT)] + [("k", len(EXACT), None)]
    frame = spark.createDataFrame(rows, "key string, seq long, at timestamp")
    out = sw.stateful(frame, key="key", builder=Seen, host=host, buckets=buckets,
                      output_schema="seq long, seen string, at timestamp", step_id="seen",
                      time=sw.EventTime("at") if event_time else None)
    got = {row["seq"]: (row["seen"], row["at"]) for row in out.collect()}
    expected = {seq: (at.isoformat(), at if seq < 3 else None) for seq, at in enumerate(EXACT)}
    if event_time:  # the watermark starts at 1970: earlier rows are late, as a null one
        expected = {seq: seen for seq, seen in expected.items() if EXACT[seq].year >= 1970}
    else:
        expected[len(EXACT)] = (None, None)
    assert {seq: (seen, None if at is None else at.astimezone(UTC))
            for seq, (seen, at) in got.items()} == expected


class Edges(sw.StatefulLogic):
    """Emits what its input's ``tag`` names (the type edges)."""

    EMITS = {"late": datetime(2263, 1, 1, tzinfo=UTC), "early": datetime(1600, 1, 1, tzinfo=UTC),
             "exact": datetime(2260, 1, 1, 0, 0, 0, 1, tzinfo=UTC), "ok": datetime(2024, 1, 1,
                                                                                    tzinfo=UTC)}

    def __init__(self, resume=None):
        self.tag = resume

    def on_item(self, value):
        self.tag = value["tag"]
        return ([{"t": self.EMITS[self.tag], "s": "x"}] if self.tag != "surrogate"
                else [{"t": self.EMITS["ok"], "s": "a\ud800"}]), sw.RETAIN

    def on_eof(self):
        return self.on_item({"tag": self.tag})

    def snapshot(self):
        return self.tag


def _offline(tag):
    with pytest.raises(sw.SchemaError) as caught:
        run(Edges, [Batch([("b", {"tag": tag})])], output_schema="t timestamp, s string",
            step_id="edges")
    return caught.value


@HOSTS
@pytest.mark.parametrize("tag, field", [("late", "t"), ("early", "t"), ("surrogate", "s")])
def test_a_type_edge_is_the_offline_schema_error_on_spark(spark, host, buckets, tag, field):
    offline = _offline(tag)
    assert (offline.step_id, offline.key, offline.field) == ("edges", "b", field)
    if field == "t":
        assert "allowed 1677-09-21 00:12:43.145225 .. 2262-04-11 23:47:16.854775 UTC" in str(
            offline)
    else:
        assert "lone surrogate '\\ud800' at index 1" in str(offline)
    frame = spark.createDataFrame([("a", "ok"), ("b", tag)], "key string, tag string")
    out = sw.stateful(frame, key="key", builder=Edges, output_schema="t timestamp, s string",
                      step_id="edges", host=host, buckets=buckets)
    with pytest.raises(sw.SchemaError) as caught:
        with sw.task_errors():
            out.collect()
    error = caught.value
    assert (type(error), error.step_id, error.key, error.field, str(error)) == (
        type(offline), "edges", "b", field, str(offline))
    assert "OutOfBoundsDatetime" not in str(error)


@HOSTS
def test_finish_refuses_a_type_edge_in_on_eof_by_name(spark, tmp_path, host, buckets):
    source = tmp_path / "in"
    source.mkdir()
    (source / "0.json").write_text(json.dumps({"key": "b", "tag": "ok"}) + "\n")
    stream = spark.readStream.schema("key string, tag string").json(str(source))
    out = sw.stateful(stream, key="key", builder=Edges, output_schema="t timestamp, s string",
                      step_id="edges", host=host, buckets=buckets)
    checkpoint = str(tmp_path / "ck")
    sw.start(out, checkpoint=checkpoint, path=str(tmp_path / "out"), stop_on_signal=False,
             trigger={"availableNow": True}).awaitTermination()

    class LateAtEof(Edges):
        def on_eof(self):
            return self.on_item({"tag": "late"})

    with pytest.raises(sw.SchemaError) as caught:  # packed: on the driver, per key: in a task
        with sw.task_errors():
            sw.finish(checkpoint, builder=LateAtEof, output_schema="t timestamp, s string",
                      step_id="edges").collect()
    assert (caught.value.step_id, caught.value.key, caught.value.field) == ("edges", "b", "t")
    assert "out of range for timestamp" in str(caught.value)


@HOSTS
def test_an_exact_timestamp_beyond_2_53_microseconds_round_trips(spark, host, buckets):
    frame = spark.createDataFrame([("a", "exact")], "key string, tag string")
    out = sw.stateful(frame, key="key", builder=Edges, output_schema="t timestamp, s string",
                      host=host, buckets=buckets)
    rows = out.collect()  # on_item's emit, then on_eof's
    assert [row["t"].astimezone(UTC) for row in rows] == [Edges.EMITS["exact"]] * 2  # was :00


def test_a_builder_refusing_none_is_named_at_plan_time_without_a_key(spark):
    def make_logic(resume_state):
        return Edges(resume_state["tag"])

    frame = spark.createDataFrame([("a", "ok")], "key string, tag string")
    with pytest.raises(sw.BuilderError) as caught:
        sw.stateful(frame, key="key", builder=make_logic, output_schema="t timestamp, s string",
                    step_id="edges")
    message = str(caught.value)
    assert message.startswith("step 'edges': the builder ")
    for expected in ("make_logic", "resume_state=None", "sample the logic"):
        assert expected in message, message
    assert "key None" not in message and "null" not in message


BIG = 2**60 + 1  # a bigint beyond 2**53: a float64 rounds it to 2**60


class Handed(sw.StatefulLogic):
    """Emits each value's two bigint fields as the logic was handed them."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [(repr(value["n"]), repr(value["o"]))], sw.RETAIN

    def snapshot(self):
        return None


BIGINTS = [("k", {"n": BIG, "o": BIG}), ("k", {"n": None, "o": BIG - 1}),
           ("k", {"n": 7, "o": None}), ("j", {"n": BIG, "o": 1})]


@HOSTS
@pytest.mark.parametrize("streaming", [False, True], ids=["bounded", "streaming"])
def test_a_bigint_beside_a_null_reaches_the_logic_exactly(spark, tmp_path, host, buckets,
                                                          streaming):
    # a null in a bigint column made pandas hand the whole column as floats:
    # 2**60 + 1 reached the logic as 2**60, and ordered equal to 2**60 - 1
    expected = run(Handed, [Batch(BIGINTS)], order_by=["o"]).by_key
    options = dict(key="key", output_schema="n string, o string", order_by=["o"], host=host,
                   buckets=buckets)
    if streaming:
        got = run_script_on_spark(spark, Handed, [Batch(BIGINTS)], workdir=str(tmp_path),
                                  input_schema="key string, n long, o long", **options).by_key
    else:
        frame = spark.createDataFrame([(key, v["n"], v["o"]) for key, v in BIGINTS],
                                      "key string, n long, o long")
        got = {}
        for row in sw.stateful(frame, builder=Handed, **options).collect():
            got.setdefault(row["key"], []).append((row["n"], row["o"]))
    assert got == expected
    assert expected == {"k": [("7", "None"), ("None", repr(BIG - 1)), (repr(BIG), repr(BIG))],
                        "j": [(repr(BIG), "1")]}


@HOSTS
def test_the_least_bigint_in_a_nullable_bigint_column_is_refused_by_name(spark, host, buckets):
    # it stands for a null on the way to the hosts: as a value it is refused, never a None
    frame = spark.createDataFrame([("k", -2**63, 1), ("k", None, 2)], "key string, n long, o long")
    out = sw.stateful(frame, key="key", builder=Handed, output_schema="n string, o string",
                      host=host, buckets=buckets, step_id="least")
    with pytest.raises(Exception, match="step 'least': column 'n' holds -9223372036854775808"):
        out.collect()
