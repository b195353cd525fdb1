"""The packed host's rows packed per bucket before the shuffle (engine/hosts/prepack.py):
each bucket gets back its rows, in their order, as the frame pyspark would have
handed it, and a step sees the same values on the per-key host, the packed host
and the packed host without packing."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax.engine.hosts.prepack import PAYLOAD, Unpacker, pack_rows
from sparkwax.engine.deploy.session_confs import PREPACK_CONF

from spark_confs import confs

ROWS = st.lists(st.tuples(st.integers(0, 4),                      # bucket
                          st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                          st.one_of(st.none(), st.text(max_size=3)),
                          st.one_of(st.none(), st.floats(allow_nan=False))),
                max_size=60)


@settings(max_examples=60, deadline=None)
@given(st.lists(ROWS, max_size=4))
def test_each_bucket_gets_its_rows_in_order_as_pyspark_converts_them(batches):
    from pyspark.sql.conversion import ArrowBatchTransformer

    schema = pa.schema([("b", pa.int64()), ("n", pa.int64()), ("s", pa.string()),
                        ("x", pa.float64())])
    arrow = [pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in rows], schema)
             for rows in batches]
    packed = list(pack_rows("b", 5)(iter(arrow)))
    payloads = {}
    for out in packed:
        assert out.schema.names == ["b", PAYLOAD]
        numbers = out.column("b").to_pylist()
        assert len(set(numbers)) == len(numbers)  # one row per bucket per batch
        for number, payload in zip(numbers, out.column(PAYLOAD).to_pylist()):
            payloads.setdefault(number, []).append(payload)
    unpack = Unpacker("UTC")
    import pandas as pd

    for number in range(5):
        rows = [r[1:] for rows in batches for r in rows if r[0] == number]
        if not rows:
            assert number not in payloads
            continue
        chunks = [pd.DataFrame({PAYLOAD: [p]}) for p in payloads[number]]
        got = unpack(iter(chunks))
        direct = pa.Table.from_pylist([dict(zip("nsx", r)) for r in rows],
                                      pa.schema([f for f in schema if f.name != "b"]))
        expected = pd.concat(ArrowBatchTransformer.to_pandas(
            direct, timezone="UTC", struct_in_pandas="dict"), axis=1)
        pd.testing.assert_frame_equal(got, expected)


INPUT = ("key string, day date, ts timestamp, n long, x double, d decimal(10,2), ok boolean, "
         "s struct<a: long, b: string>, xs array<long>, m map<string, long>")
ROW_VALUES = [
    {"key": "a", "day": "2024-01-01", "ts": "2024-01-01T10:00:00Z", "n": 1, "x": 0.5,
     "d": "1.25", "ok": True, "s": {"a": 1, "b": "x"}, "xs": [1, 2], "m": {"k": 1}},
    {"key": "a", "day": "2024-01-01", "ts": None, "n": None, "x": None, "d": None,
     "ok": None, "s": None, "xs": None, "m": None},
    {"key": "a", "day": "2024-01-02", "ts": "2024-01-02T00:00:00Z", "n": -3, "x": 1e300,
     "d": "-99.99", "ok": False, "s": {"a": None, "b": None}, "xs": [], "m": {}},
    {"key": "b", "day": "2024-01-05", "ts": "1969-12-31T23:59:59Z", "n": 2**62, "x": -0.0,
     "d": "0.01", "ok": True, "s": {"a": 2, "b": ""}, "xs": [None, 3], "m": {"z": None}},
    {"key": "c", "day": "2024-01-03", "ts": None, "n": 7, "x": 2.0, "d": "3.00",
     "ok": True, "s": None, "xs": [4], "m": {"a": 1, "b": 2}},
]


def typed(value):
    """A value with the type of every part spelled out (so int vs numpy int,
    dict vs Row, list vs ndarray all differ)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [typed(v) for v in value]]
    return [type(value).__name__, repr(value)]


class Seen(sw.StatefulLogic):
    """Emits each value as it reached the logic, types included."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [json.dumps(typed(value))], sw.RETAIN

    def snapshot(self):
        return None


@pytest.mark.parametrize("time_zone", ["UTC", "America/New_York"])
def test_a_step_sees_the_same_values_on_every_host(spark, tmp_path, time_zone):
    source = tmp_path / "in"
    source.mkdir()
    for number in range(2):  # two files: the rows of several input partitions interleave
        (source / f"{number}.json").write_text(
            "".join(json.dumps(r) + "\n" for r in ROW_VALUES[number::2]))
    session = {"spark.sql.session.timeZone": time_zone,
                "spark.sql.execution.arrow.maxRecordsPerBatch": "1"}  # a payload per row
    results = {}
    for label, host, prepack in [("per_key", "per_key", "true"),
                                 ("packed", "packed", "true"),
                                 ("packed, not packed first", "packed", "false")]:
        with confs(spark, {**session, PREPACK_CONF: prepack}):
            stream = spark.readStream.schema(INPUT).json(str(source))
            out = sw.stateful(stream, key=["key", "day"], builder=Seen, host=host,
                              buckets=3 if host == "packed" else None,
                              output_schema="seen string", step_id="seen")
            table = f"seen_{len(results)}"
            query = out.writeStream.format("memory").queryName(table) \
                .option("checkpointLocation", str(tmp_path / table)).start()
            try:
                query.processAllAvailable()
            finally:
                query.stop()
        by_key = {}
        for found in spark.table(table).collect():
            by_key.setdefault((found["key"], found["day"]), []).append(found["seen"])
        results[label] = {k: sorted(v) for k, v in by_key.items()}
    per_key = results["per_key"]
    assert sum(len(v) for v in per_key.values()) == len(ROW_VALUES)
    b = json.loads(per_key[("b", date(2024, 1, 5))][0])
    assert (b["n"], b["d"], b["ts"]) == (["int", repr(2**62)], ["Decimal", "Decimal('0.01')"], [
        "datetime", repr(datetime(1969, 12, 31, 23, 59, 59, tzinfo=timezone.utc))])
    assert results["packed"] == per_key
    assert results["packed, not packed first"] == per_key
