"""Every operator on Spark: the same per-key outputs as offline.

Bounded DataFrames (fast) for each operator, compared per key with
``run_bounded``; streaming queries (windows through ``run_script_on_spark``,
one of them a watermark jump past several windows of a key, and a two-input
join on file streams) compared with the offline runner.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import astuple, is_dataclass
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.testing.spark import run_script_on_spark
from sparkwax.testing import Batch, Crash, run, run_bounded

from kit import T0, at as t, each_spark_host_with_buckets as HOSTS

EVENTS = "user string, ts timestamp, amount double, id string"
TIME = sw.EventTime("ts", watermark="30 minutes")


ROWS = [("ann", 1, 10.0, "e1"), ("ann", 4, 25.0, "e2"), ("ann", 3, 5.0, "e1"),
        ("ann", 12, 7.5, "e3"), ("ann", 30, 1.0, "e4"), ("ann", 31, 40.0, "e4"),
        ("bob", 2, 3.0, "e5"), ("bob", 9, 3.0, "e6"), ("bob", 40, 8.0, "e7"),
        ("cy", 5, 2.0, "e8")]


def offline_items(rows=ROWS):
    return [(u, {"ts": t(m), "amount": a, "id": i}) for u, m, a, i in rows]


@pytest.fixture(scope="module")
def events(spark):
    frame = spark.createDataFrame([(u, t(m), a, i) for u, m, a, i in ROWS], EVENTS)
    return frame.cache()


# -- comparing Spark rows with offline emits ------------------------------------------


def plain(value):
    """Spark values as offline ones: Rows as dicts, naive datetimes as UTC."""
    if isinstance(value, Row):
        return {k: plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def spark_by_key(frame, keys=1):
    got = {}
    for row in frame.collect():  # a key's rows come from one group, in emission order
        key = row[0] if keys == 1 else tuple(row[:keys])
        got.setdefault(key, []).append(tuple(plain(v) for v in row[keys:]))
    return got


def offline_by_key(result, shape=None):
    out = {}
    for key, values in result.by_key.items():
        rows = []
        for value in values:
            if shape is not None:
                value = shape(value)
            if is_dataclass(value):
                value = astuple(value) if not isinstance(value, ops.WindowOut) else (
                    value.window_id, value.open_time, value.close_time, value.value,
                    value.late)
            elif isinstance(value, dict):
                value = tuple(value.values())
            elif not isinstance(value, tuple):
                value = (value,)
            rows.append(value)
        out[key] = rows
    return out


def same(frame, result, shape=None):
    assert spark_by_key(frame) == offline_by_key(result, shape)


# -- Bytewax's family -------------------------------------------------------------


def running_total(total, value):
    total = (total or 0.0) + value["amount"]
    return (None if total > 30 else total), total


def test_stateful_map_and_flat_map(events):
    mapped = sw.stateful(events, key="user", builder=ops.stateful_map(running_total),
                         output_schema="total double", time=TIME)
    same(mapped, run_bounded(ops.stateful_map(running_total), offline_items(), time=TIME))

    def ids(seen, value):
        seen = (seen or ()) + (value["id"],)
        return seen, [(value["id"], len(seen))] if len(seen) % 2 else []

    flat = sw.stateful(events, key="user", builder=ops.stateful_flat_map(ids),
                       output_schema="id string, n long", order_by="ts")
    expected = run_bounded(ops.stateful_flat_map(ids), offline_items(), order_by="ts")
    same(flat, expected)
    assert expected.by_key["ann"] == [("e1", 1), ("e2", 3), ("e4", 5)]


def test_final_family(events):
    by_amount = sw.stateful(events, key="user", builder=ops.max_final(by="amount"),
                            output_schema=sw.value_fields(events, "user"), time=TIME)
    same(by_amount, run_bounded(ops.max_final(by="amount"), offline_items(), time=TIME))
    cases = [
        (ops.count_final(), "n long"),
        (ops.min_final(by=lambda v: (v["amount"], v["id"])), sw.value_fields(events, "user")),
        (ops.reduce_final(lambda a, b: a if a["ts"] > b["ts"] else b),
         sw.value_fields(events, "user")),
        (ops.fold_final(lambda: 0.0, lambda acc, v: acc + v["amount"]), "total double"),
    ]
    for builder, schema in cases:
        frame = sw.stateful(events, key="user", builder=builder, output_schema=schema,
                            time=TIME)
        same(frame, run_bounded(builder, offline_items(), time=TIME))
    counts = sw.stateful(events, key="user", builder=ops.count_final(), output_schema="n long")
    assert sorted(counts.collect()) == [("ann", 6), ("bob", 3), ("cy", 1)]


def test_collect(events):
    op = ops.collect(timedelta(minutes=5), 3)
    frame = sw.stateful(events, key="user", builder=op, time=TIME,
                        output_schema=f"batch array<{sw.value_struct(events, 'user')}>")
    expected = run_bounded(op, offline_items(), time=TIME)
    same(frame, expected)
    assert [[v["id"] for v in b] for b in expected.by_key["ann"]] == [
        ["e1", "e1", "e2"], ["e3"], ["e4", "e4"]]


# -- join and connect ---------------------------------------------------------------


@pytest.fixture(scope="module")
def orders_and_payments(spark):
    orders = spark.createDataFrame(
        [("o1", "ann", t(1), 30.0), ("o2", "bob", t(2), 12.5), ("o3", "cy", t(3), 8.0)],
        "order_id string, user string, ts timestamp, total double")
    payments = spark.createDataFrame(
        [("o1", t(5), 20, "card"), ("o1", t(6), 10, "cash"), ("o2", t(4), 13, "card"),
         ("o4", t(7), 1, "card")],
        "order_id string, ts timestamp, paid long, method string")
    return orders, payments


def join_offline(orders, payments, **modes):
    return run_bounded(ops.joiner(["orders", "payments"], **modes),
                       list(_tagged_items(orders, payments)),
                       time=sw.EventTime("ts", watermark="1 hour"))


@pytest.mark.parametrize("modes", [dict(emit_mode="final", insert_mode="product"),
                                   dict(emit_mode="running", insert_mode="first")])
def test_join_dataframes(orders_and_payments, modes):
    orders, payments = orders_and_payments
    joined = sw.join(orders, payments, key="order_id", names=["orders", "payments"],
                      time=sw.EventTime("ts", watermark="1 hour"), **modes)
    assert joined.columns == ["order_id", "orders", "payments"]
    same(joined, join_offline(orders, payments, **modes))


def test_join_complete(orders_and_payments):
    orders, payments = orders_and_payments
    matched = [F.col("order_id").isin("o1", "o2")]
    orders, payments = orders.where(*matched), payments.where(*matched)
    joined = sw.join(orders, payments, key="order_id", names=["orders", "payments"],
                      time=sw.EventTime("ts", watermark="1 hour"))
    same(joined, join_offline(orders, payments))
    rows = sorted(joined.collect())
    assert [(r.order_id, r.orders.total, r.payments.paid) for r in rows] == [
        ("o1", 30.0, 20), ("o2", 12.5, 13)]


def test_bounded_join_with_unmatched_keys(orders_and_payments):
    orders, payments = orders_and_payments
    joined = sw.join(orders, payments, key="order_id")
    assert sorted(r.order_id for r in joined.collect()) == ["o1", "o2"]


class OrderStatus(sw.StatefulLogic):
    """A connected-streams logic: orders and payments with different schemas;
    emits the order's status after every event."""

    def __init__(self, resume=None):
        self.total, self.paid = resume or (None, 0)

    def on_item(self, item):
        side, value = item
        if side == "orders":
            self.total = value["total"]
        else:
            self.paid += value["paid"]
        status = "open" if self.total is None or self.paid < self.total else "paid"
        return [(side, self.paid, status)], sw.RETAIN

    def snapshot(self):
        return (self.total, self.paid)


def test_connect(orders_and_payments):
    orders, payments = orders_and_payments
    frame = sw.connect(orders, payments, key="order_id", builder=OrderStatus,
                        names=["orders", "payments"],
                        output_schema="side string, paid long, status string", order_by="ts")
    got = spark_by_key(frame)
    assert got == {"o1": [("orders", 0, "open"), ("payments", 20, "open"),
                          ("payments", 30, "paid")],
                   "o2": [("orders", 0, "open"), ("payments", 13, "paid")],
                   "o3": [("orders", 0, "open")], "o4": [("payments", 1, "open")]}


# -- windows ------------------------------------------------------------------------

TEN = ops.TumblingWindower(timedelta(minutes=10), align_to=T0)


def test_tumbling_windows_with_late_values(events):
    op = ops.count_window(TEN, lateness="2 minutes")
    schema = ops.window_schema("long", late=sw.value_struct(events, "user"))
    order = sw.EventTime("ts", watermark="1 hour")
    # in order of amount, ann's e4 (30 min, 1.0) comes first: it moves ann's watermark
    # to 28 min, so her values in [0, 10) and [10, 20) that follow are late
    frame = sw.stateful(events, key="user", builder=op, output_schema=schema, time=order,
                        order_by="amount")
    expected = run_bounded(op, offline_items(), time=order, order_by="amount")
    same(frame, expected)
    late = [w for w in expected.by_key["ann"] if w.late is not None]
    assert [(w.window_id, w.late["id"]) for w in late] == [(0, "e1"), (1, "e3"), (0, "e1"),
                                                           (0, "e2")]
    results, late_rows = sw.split_late(frame)
    assert results.columns == ["user", "window_id", "open_time", "close_time", "value"]
    assert late_rows.columns == ["user", "window_id", "open_time", "close_time", "ts",
                                 "amount", "id"]
    assert sorted(r.id for r in late_rows.collect()) == ["e1", "e1", "e2", "e3"]


@pytest.mark.parametrize("name", ["sliding_collect", "session_fold", "session_max",
                                  "tumbling_min", "tumbling_reduce", "session_count"])
def test_window_aggregations(events, name):
    value = sw.value_struct(events, "user")
    sliding = ops.SlidingWindower("10 minutes", "5 minutes", align_to=T0)
    sessions = ops.SessionWindower("6 minutes")
    op, value_type = {
        "sliding_collect": (ops.collect_window(sliding), f"array<{value}>"),
        "session_fold": (ops.fold_window(sessions, lambda: 0.0,
                                         lambda acc, v: acc + v["amount"],
                                         lambda a, b: a + b), "double"),
        "session_max": (ops.max_window(sessions, by="amount"), value),
        "tumbling_min": (ops.min_window(TEN, by="amount"), value),
        "tumbling_reduce": (ops.reduce_window(TEN, lambda a, b: b), value),
        "session_count": (ops.count_window(sessions), "long"),
    }[name]
    frame = sw.stateful(events, key="user", builder=op, output_schema=ops.window_schema(value_type),
                        time=TIME)
    same(frame, run_bounded(op, offline_items(), time=TIME))


def test_session_merge_on_spark(spark):
    # 0 and 8 are two sessions until 4 arrives (ordered by arrival: seq)
    frame = spark.createDataFrame([("k", t(0), 1), ("k", t(8), 2), ("k", t(4), 3)],
                                  "key string, ts timestamp, seq long")
    op = ops.collect_window(ops.SessionWindower("5 minutes"))
    out = sw.stateful(frame, key="key", builder=op, order_by="seq",
                      time=sw.EventTime("ts", watermark="1 hour"),
                      output_schema=ops.window_schema("array<struct<ts: timestamp, seq: long>>"))
    rows = out.collect()
    assert len(rows) == 1
    assert [v.seq for v in rows[0].value] == [1, 3, 2]
    assert (plain(rows[0].open_time), plain(rows[0].close_time)) == (t(0), t(8))
    assert rows[0].window_id == 0                       # Bytewax numbers sessions 0, 1, ...


def test_join_window(orders_and_payments):
    orders, payments = orders_and_payments
    names = ["orders", "payments"]
    op = ops.join_window(TEN, names, emit_mode="final")
    pair = (f"struct<orders: {sw.value_struct(orders, 'order_id')}, "
            f"payments: {sw.value_struct(payments, 'order_id')}>")
    time = sw.EventTime("ts", watermark="1 hour")
    frame = sw.connect(orders, payments, key="order_id", builder=op, names=names, time=time,
                        output_schema=ops.window_schema(pair))
    expected = run_bounded(op, list(_tagged_items(orders, payments)), time=time)
    got = spark_by_key(frame)
    want = {k: [(w.window_id, w.open_time, w.close_time,
                 dict(zip(names, w.value)), None) for w in ws]
            for k, ws in expected.by_key.items()}
    assert got == want
    assert got["o1"][0][3]["payments"]["method"] == "cash"   # "last" per side


def _tagged_items(orders, payments):
    for side, frame in (("orders", orders), ("payments", payments)):
        for row in frame.collect():
            value = {k: plain(v) for k, v in row.asDict().items() if k != "order_id"}
            yield row["order_id"], ops.Tagged(side, value)


# -- recipes, ttl, rules ------------------------------------------------------------------


def test_deduplicate_and_throttle(events):
    fields = sw.value_fields(events, "user")
    dedup = ops.deduplicate("id", "10 minutes")
    frame = sw.stateful(events, key="user", builder=dedup, output_schema=fields, time=TIME)
    expected = run_bounded(dedup, offline_items(), time=TIME)
    same(frame, expected)
    assert [v["id"] for v in expected.by_key["ann"]] == ["e1", "e2", "e3", "e4"]

    limit = ops.throttle(2, "5 minutes", overflow="flag")
    frame = sw.stateful(events, key="user", builder=limit, time=TIME,
                        output_schema=f"passed boolean, value {sw.value_struct(events, 'user')}")
    expected = run_bounded(limit, offline_items(), time=TIME)
    same(frame, expected)
    assert [v.passed for v in expected.by_key["ann"]] == [True, True, False, True, True, True]


def test_session_recipe_and_ttl(events):
    op = ops.session("5 minutes", lambda start, end, values: (start, end, len(values),
                                                              sum(v["amount"] for v in values)))
    frame = sw.stateful(events, key="user", builder=op, time=TIME,
                        output_schema="start timestamp, `end` timestamp, events long, "
                                      "amount double")
    expected = run_bounded(op, offline_items(), time=TIME)
    same(frame, expected)
    assert expected.by_key["ann"][0] == (t(1), t(4), 3, 40.0)

    ttl = ops.with_ttl(ops.count_final(), "8 minutes", flush=True)
    frame = sw.stateful(events, key="user", builder=ttl, time=TIME, output_schema="n long")
    expected = run_bounded(ttl, offline_items(), time=TIME)
    same(frame, expected)
    assert expected.by_key == {"ann": [3, 1, 2], "bob": [2, 1], "cy": [1]}


def test_rules_from_a_dataframe(spark, events):
    rules = ops.rules_from(spark.createDataFrame([("large", 20.0), ("tiny", 2.5)],
                                                 "rule string, bound double"), key="rule")

    def labeller(table, resume):
        def label(count, value):
            amount = value["amount"]
            name = ("large" if amount >= table["large"]["bound"] else
                    "tiny" if amount <= table["tiny"]["bound"] else "normal")
            return (count or 0) + 1, name
        return ops.stateful_map(label)(resume)

    frame = sw.stateful(events, key="user", builder=ops.with_rules(rules, labeller),
                        output_schema="label string", order_by="ts")
    got = {k: [v[0] for v in vs] for k, vs in spark_by_key(frame).items()}
    assert got == {"ann": ["normal", "normal", "large", "normal", "tiny", "large"],
                   "bob": ["normal", "normal", "normal"], "cy": ["tiny"]}


# -- streaming ------------------------------------------------------------------------

STREAM_INPUT = "key string, ts timestamp, value long"


def _ev(minutes, value):
    return {"ts": t(minutes), "value": value}


def test_streaming_windows_match_offline(spark, tmp_path):
    script = [Batch([("a", _ev(1, 1)), ("a", _ev(4, 2)), ("b", _ev(2, 3))]),
              Batch([("a", _ev(13, 4)), ("b", _ev(3, 5)), ("a", _ev(6, 6))]),
              Crash(),
              Batch([("c", _ev(40, 7)), ("a", _ev(8, 8))]),
              Batch([("c", _ev(70, 9))])]
    time = sw.EventTime("ts", watermark="30 minutes")
    op = ops.count_window(TEN, lateness="1 minute")
    schema = ops.window_schema("long", late="struct<ts: timestamp, value: long>")
    online = run_script_on_spark(spark, op, script, input_schema=STREAM_INPUT,
                                 output_schema=schema, time=time,
                                 workdir=str(tmp_path / "tumbling"))
    offline = run(op, script, time=time)
    assert {k: [plain(v) for v in vs] for k, vs in online.by_key.items()} == \
        offline_by_key(offline)
    # a: window 0 (3 values) closed on a's own watermark (12 min) when 13 came,
    # so 8 (behind the engine's watermark only by 30 min) is late for it; b's
    # window and a's window 1 close on the engine's watermark (10, then 40 min).
    assert [(w.window_id, w.value, w.late and w.late["value"]) for w in offline.by_key["a"]] \
        == [(0, 3, None), (0, None, 8), (1, 1, None)]
    assert offline.by_key["b"] == [ops.WindowOut(0, t(0), t(10), 2)]
    assert offline.live_keys == 1                   # c's window [70, 80) is still open


def test_streaming_watermark_jump_closes_every_due_window(spark, tmp_path):
    # a opens three windows while the watermark is 0; c's 75 min moves it to 45 min
    # and the no-data batch that follows closes all three of a's windows at once
    # (a's timer is its first close time, 10 min; on_notify reads sw.now()).
    script = [Batch([("a", _ev(1, 1)), ("a", _ev(12, 2)), ("a", _ev(25, 3)), ("a", _ev(27, 4))]),
              Batch([("c", _ev(75, 5))])]
    time = sw.EventTime("ts", watermark="30 minutes")
    op = ops.count_window(TEN)
    online = run_script_on_spark(spark, op, script, input_schema=STREAM_INPUT,
                                 output_schema=ops.window_schema("long"), time=time,
                                 workdir=str(tmp_path / "jump"))
    offline = run(op, script, time=time)
    assert {k: [plain(v) for v in vs] for k, vs in online.by_key.items()} == \
        offline_by_key(offline)
    assert offline.by_key == {"a": [ops.WindowOut(0, t(0), t(10), 1),
                                    ops.WindowOut(1, t(10), t(20), 1),
                                    ops.WindowOut(2, t(20), t(30), 2)]}
    assert offline.live_keys == 1                   # c's window [70, 80) is still open


def test_streaming_join_of_two_file_streams(spark, tmp_path):
    folders = {name: tmp_path / name for name in ("orders", "payments")}
    for folder in folders.values():
        folder.mkdir()

    def write(name, number, rows):
        staging = tmp_path / f"{name}-{number}.tmp"
        staging.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.replace(staging, folders[name] / f"part-{number}.json")

    write("orders", 0, [{"order_id": "o1", "ts": t(1).isoformat(), "total": 30.0},
                        {"order_id": "o2", "ts": t(2).isoformat(), "total": 5.0}])
    write("payments", 0, [{"order_id": "o1", "ts": t(3).isoformat(), "paid": 30,
                           "method": "card"}])
    orders = spark.readStream.schema("order_id string, ts timestamp, total double") \
        .json(str(folders["orders"]))
    payments = spark.readStream.schema("order_id string, ts timestamp, paid long, "
                                       "method string").json(str(folders["payments"]))
    joined = sw.join(orders, payments, key="order_id", names=["orders", "payments"],
                      time=sw.EventTime("ts", watermark="1 hour"))
    rows = []
    query = (joined.writeStream.foreachBatch(lambda frame, _: rows.extend(frame.collect()))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        write("payments", 1, [{"order_id": "o2", "ts": t(9).isoformat(), "paid": 5,
                               "method": "cash"}])
        query.processAllAvailable()
    finally:
        query.stop()
    got = sorted((r.order_id, r.orders.total, r.payments.paid, r.payments.method)
                 for r in rows)
    assert got == [("o1", 30.0, 30, "card"), ("o2", 5.0, 5, "cash")]


# -- stateful_filter, running fold/reduce, sum/mean windows, sequence: both hosts --------


def _small(value):
    return value["amount"] < 10


def _big(value):
    return value["amount"] >= 10


@HOSTS
def test_filter_fold_reduce_and_window_means(events, host, buckets):
    fields = sw.value_fields(events, "user")
    cases = [
        (ops.stateful_filter(lambda top, v: (max(top or 0.0, v["amount"]),
                                             top is None or v["amount"] > top)), fields),
        (ops.fold(lambda: 0.0, lambda acc, v: acc + v["amount"]), "total double"),
        (ops.reduce(lambda a, b: a if a["amount"] >= b["amount"] else b), fields),
        (ops.sum_window(TEN, by="amount"), ops.window_schema("double")),
        (ops.mean_window(ops.SessionWindower("6 minutes"), by="amount"),
         ops.window_schema("double")),
    ]
    for builder, schema in cases:
        frame = sw.stateful(events, key="user", builder=builder, output_schema=schema,
                            time=TIME, host=host, buckets=buckets)
        same(frame, run_bounded(builder, offline_items(), time=TIME))
    highs = run_bounded(cases[0][0], offline_items(), time=TIME)
    assert [v["id"] for v in highs.by_key["ann"]] == ["e1", "e2", "e4"]


@HOSTS
@pytest.mark.parametrize("contiguity", ["strict", "relaxed"])
def test_sequence_on_a_bounded_dataframe(events, host, buckets, contiguity):
    op = ops.sequence([_small, _small, _big], within="30 minutes", contiguity=contiguity)
    frame = sw.stateful(events, key="user", builder=op, time=TIME, host=host, buckets=buckets,
                        output_schema=f"matched array<{sw.value_struct(events, 'user')}>")
    expected = run_bounded(op, offline_items(), time=TIME)
    same(frame, expected)
    assert expected.outputs                     # something matched


SEQUENCE_SCRIPT = [
    Batch([("a", _ev(0, 1)), ("a", _ev(1, 2)), ("b", _ev(1, 1))]),
    Batch([("a", _ev(2, 9)), ("b", _ev(2, 1)), ("c", _ev(3, 1))]),   # a matches
    Crash(),
    Batch([("c", _ev(4, 1)), ("b", _ev(3, 3))]),   # b: 1, 1, 3 (3 < 5: no match)
    Batch([("x", _ev(30, 0))]),                    # watermark 30 - 20: c's partials expire
    Batch([("c", _ev(40, 7)), ("x", _ev(60, 0))]),
]


@HOSTS
def test_streaming_sequence_expires_partial_matches_by_timer(spark, tmp_path, host, buckets):
    from sparkwax.engine.checkpoints.snapshots import read_entries

    low, high = (lambda v: v["value"] < 5), (lambda v: v["value"] >= 5)
    op = ops.sequence([low, low, high], within="5 minutes", contiguity="relaxed")
    time = sw.EventTime("ts", watermark="20 minutes")
    workdir = tmp_path / "sequence"
    online = run_script_on_spark(spark, op, SEQUENCE_SCRIPT, input_schema=STREAM_INPUT,
                                 output_schema="matched array<struct<ts: timestamp, "
                                               "value: long>>",
                                 time=time, workdir=str(workdir), host=host, buckets=buckets)
    offline = run(op, SEQUENCE_SCRIPT, time=time)
    assert {k: [plain(v) for v in vs] for k, vs in online.by_key.items()} == \
        offline_by_key(offline)
    assert offline.by_key == {"a": [[_ev(0, 1), _ev(1, 2), _ev(2, 9)]]}
    # c's partial matches (3 and 4 min) expired when the watermark passed 8 and 9 min,
    # so c's 7 at 40 min matched nothing; x's value 0 at 60 min is the one partial left
    entries = {e.key: e.snapshot for e in read_entries(spark, str(workdir / "checkpoint"))}
    assert entries == offline.snapshots and sorted(entries) == ["x"]


# -- step-level ttl= and max_state_bytes= --------------------------------------------------

TTL_SCRIPT = [
    Batch([("a", _ev(0, 1)), ("b", _ev(1, 2))]),
    Batch([("a", _ev(8, 3)), ("c", _ev(9, 4))]),
    Crash(),
    Batch([("x", _ev(40, 1))]),                    # watermark 38: a, b and c expire
    Batch([("a", _ev(60, 5)), ("x", _ev(70, 1))]),  # x idle for 30 min: expired first
]


@HOSTS
def test_streaming_ttl_expires_idle_keys(spark, tmp_path, host, buckets):
    from sparkwax.engine.checkpoints.snapshots import read_entries

    op = ops.fold(lambda: 0, lambda acc, v: acc + v["value"])
    ttl = ops.Ttl("15 minutes", flush=lambda snapshot: [-snapshot[0]])
    time = sw.EventTime("ts", watermark="2 minutes")
    workdir = tmp_path / "ttl"
    online = run_script_on_spark(spark, op, TTL_SCRIPT, input_schema=STREAM_INPUT,
                                 output_schema="total long", time=time, workdir=str(workdir),
                                 host=host, buckets=buckets, ttl=ttl)
    offline = run(op, TTL_SCRIPT, time=time, ttl=ttl)
    assert {k: [tuple(v) for v in vs] for k, vs in online.by_key.items()} == \
        offline_by_key(offline)
    assert offline.by_key == {"a": [1, 4, -4, 5], "b": [2, -2], "c": [4, -4], "x": [1, -1, 1]}
    entries = {e.key: e.snapshot for e in read_entries(spark, str(workdir / "checkpoint"))}
    assert entries == offline.snapshots == {"a": ((5,), t(60)), "x": ((1,), t(70))}
    if host == "per_key":
        ends = sw.finish(str(workdir / "checkpoint"), builder=op, output_schema="total long",
                         time=time, ttl=ttl)
        # the watermark is 68 min: a (idle since 60) is not expired yet; fold emits nothing
        # at EOF, and nothing fails to restore the ttl's snapshots
        assert ends.collect() == []


class _FoldFinalBefore(sw.StatefulLogic):
    """``ops.fold_final(list, append)`` as earlier sparkwax stored it: ``(acc,)``."""

    def __init__(self, resume=None):
        self.acc = resume[0] if resume is not None else []

    def on_item(self, value):
        self.acc = self.acc + [value]
        return [], sw.RETAIN

    def on_eof(self):
        return [self.acc], sw.DISCARD

    def snapshot(self):
        return (self.acc,)


@HOSTS
def test_fold_final_restores_a_checkpoint_written_before(spark, tmp_path, host, buckets):
    from sparkwax.engine.checkpoints.snapshots import read_entries

    source, checkpoint = tmp_path / "in", str(tmp_path / "checkpoint")
    source.mkdir()

    def run_with(builder, number, values):
        (source / f"batch-{number}.json").write_text(
            "".join(json.dumps({"key": "k", "value": v}) + "\n" for v in values))
        stream = spark.readStream.schema("key string, value long").json(str(source))
        out = sw.stateful(stream, key="key", builder=builder, value="value", step_id="f",
                          output_schema="values array<long>", host=host, buckets=buckets)
        query = sw.start(out, checkpoint=checkpoint,   # emits nothing before EOF
                         foreach_batch=lambda frame, _: frame.collect())
        query.processAllAvailable()
        query.stop()
        return {e.key: e.snapshot for e in read_entries(spark, checkpoint, step_id="f")}

    assert run_with(_FoldFinalBefore, 0, [1, 2]) == {"k": ([1, 2],)}
    # the same step with today's fold_final: restores (acc,), stores acc (Bytewax's shape)
    assert run_with(ops.fold_final(list, lambda acc, v: acc + [v]), 1, [3]) == {"k": [1, 2, 3]}


def test_ttl_needs_the_event_time_in_the_values(events):
    with pytest.raises(sw.ConfigError, match="drop value="):
        sw.stateful(events, key="user", builder=ops.count_final(), output_schema="n long",
                    time=TIME, value="amount", ttl="1 hour")


@HOSTS
def test_max_state_bytes_fails_the_step_naming_the_key(spark, tmp_path, host, buckets):
    op = ops.fold(list, lambda acc, v: acc + [v["value"]] * 20)   # ~40 bytes per value
    script = [Batch([("a", _ev(0, 1)), ("a", _ev(1, 2)), ("b", _ev(1, 3))]),
              Batch([("b", _ev(2, 4)), ("a", _ev(2, 5))])]
    assert run(op, script[:1], max_state_bytes=120).live_keys == 2
    with pytest.raises(Exception, match=r"(?s)step 'ids', key 'a', snapshot.*StateTooLarge"):
        run_script_on_spark(spark, op, script, input_schema=STREAM_INPUT,
                            output_schema="values array<long>", step_id="ids",
                            workdir=str(tmp_path / "limit"), host=host, buckets=buckets,
                            max_state_bytes=120)


def test_ttl_is_part_of_the_steps_checkpoint_description(spark, tmp_path):
    from sparkwax.engine.checkpoints.step_changes import describe_changes
    from sparkwax.engine.queries.start import step_descriptions

    (tmp_path / "in").mkdir()
    stream = spark.readStream.schema(STREAM_INPUT).json(str(tmp_path / "in"))
    time = sw.EventTime("ts", watermark="1 minute")

    def state(**options):
        frame = sw.stateful(stream, key="key", builder=ops.count_final(), time=time,
                            output_schema="n long", step_id="n", **options)
        return step_descriptions(frame)[0]

    plain, with_ttl = state(), state(ttl="1 hour")
    assert (plain["state"], with_ttl["state"]) == ("per_key/1", "per_key/1 ttl")
    assert state(ttl="2 hours") == with_ttl                   # the duration may change
    assert state(max_state_bytes=10) == plain                 # the cap changes no snapshot
    assert state(ttl="1 hour", host="packed", buckets=3)["state"] == "packed/1 buckets=3 ttl"
    assert "step 'n': state changed from 'per_key/1' to 'per_key/1 ttl'" in describe_changes(
        {"steps": {"n": plain}}, {"steps": {"n": with_ttl}})


@HOSTS
def test_card_testing_sequence_on_the_demo_clickstream(spark, host, buckets):
    from sparkwax.cli.demo import clickstream

    stream = clickstream.generate(20_000, seed=7)
    columns = ["card_id", "ts", "amount", "event_id"]
    rows = [tuple(e[c] for c in columns) for e in stream.events
            if e["event_type"] == "purchase"]
    frame = spark.createDataFrame(rows, "card_id string, ts timestamp, amount double, "
                                        "event_id long")
    op = ops.sequence([_test_charge] * 3, within="1 minute")
    time = sw.EventTime("ts", watermark="5 minutes")
    alerts = sw.stateful(frame, key="card_id", builder=op, time=time, host=host,
                         buckets=buckets,
                         output_schema=f"matched array<{sw.value_struct(frame, 'card_id')}>")
    expected = run_bounded(op, [(r[0], dict(zip(columns[1:], r[1:]))) for r in rows],
                           time=time)
    same(alerts, expected)
    assert {k: len(v) for k, v in expected.by_key.items()} == {"c-000214": 7}


def _test_charge(purchase):
    return purchase["amount"] < 2
