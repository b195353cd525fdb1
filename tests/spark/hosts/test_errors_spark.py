"""Bad input on Spark: specific errors naming step, key, callback and value;
a fixed restart resumes from the last committed state."""

import json

import pytest
from pyspark.errors import StreamingQueryException

import sparkwax as sw


class Count(sw.StatefulLogic):
    fail_on = "boom"

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        if value == self.fail_on:
            raise ValueError(f"cannot handle {value!r}")
        self.n += 1
        return [self.n], sw.RETAIN

    def snapshot(self):
        return self.n


class FixedCount(Count):
    fail_on = object()


class BadEmit(Count):
    def on_item(self, value):
        return [{"n": "not a number"}], sw.RETAIN


def _write(folder, number, rows):
    path = folder / f"batch-{number}.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import os
    os.utime(path, (1_600_000_000 + number,) * 2)


def _start(spark, tmp_path, builder, sink, schema="n long"):
    stream = spark.readStream.schema("key string, seq long, value string") \
        .option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    out = sw.stateful(stream, key="key", builder=builder, value="value", order_by="seq",
                      output_schema=schema, step_id="counts")
    return out.writeStream.foreachBatch(sink) \
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()


def test_on_item_error_names_step_key_and_row_and_restart_resumes(spark, tmp_path):
    (tmp_path / "in").mkdir()
    _write(tmp_path / "in", 0, [{"key": "k", "seq": 0, "value": "a"},
                                {"key": "k", "seq": 1, "value": "b"}])
    _write(tmp_path / "in", 1, [{"key": "k", "seq": 0, "value": "c"},
                                {"key": "k", "seq": 1, "value": "boom"}])
    _write(tmp_path / "in", 2, [{"key": "k", "seq": 0, "value": "d"}])
    seen = []

    def sink(frame, batch_id):
        seen.extend((batch_id, tuple(r)) for r in frame.collect())

    query = _start(spark, tmp_path, Count, sink)
    with pytest.raises(StreamingQueryException) as failure:
        query.processAllAvailable()
    message = str(failure.value)
    for part in ("step 'counts'", "key 'k'", "on_item", "ValueError", "'boom'"):
        assert part in message, f"{part!r} missing from: {message[:2000]}"
    assert seen == [(0, ("k", 1)), (0, ("k", 2))]
    query = _start(spark, tmp_path, FixedCount, sink)  # the code is fixed; same checkpoint
    query.processAllAvailable()
    query.stop()
    # Batch 1 runs again from the state committed by batch 0: nothing lost, nothing twice.
    assert seen[2:] == [(1, ("k", 3)), (1, ("k", 4)), (2, ("k", 5))]


def test_emit_not_fitting_the_schema_names_the_field(spark, tmp_path):
    frame = spark.createDataFrame([("k", 0, "a")], "key string, seq long, value string")
    out = sw.stateful(frame, key="key", builder=BadEmit, value="value",
                      output_schema="n long", step_id="bad-emit")
    with pytest.raises(Exception) as failure:
        out.collect()
    message = str(failure.value)
    for part in ("step 'bad-emit'", "key 'k'", "output field 'n'", "'not a number'",
                 "does not fit bigint"):
        assert part in message, f"{part!r} missing from: {message[:2000]}"


def test_order_by_missing_column_is_a_config_error(spark):
    frame = spark.createDataFrame([("k", 0, "a")], "key string, seq long, value string")
    with pytest.raises(sw.ConfigError, match=r"order_by names missing column\(s\) \['nope'\]"):
        sw.stateful(frame, key="key", builder=Count, order_by="nope", output_schema="n long")


@pytest.mark.parametrize("rows, schema", [
    ([("k", 0, "a"), (None, 1, "b")], "key string, seq long, value string"),
    ([(1.0, 0, "a"), (float("nan"), 1, "b")], "key double, seq long, value string"),
])
def test_null_or_nan_key_is_an_input_error(spark, rows, schema):
    frame = spark.createDataFrame(rows, schema)
    out = sw.stateful(frame, key="key", builder=Count, value="value", output_schema="n long",
                      step_id="keyed")
    with pytest.raises(Exception) as failure:
        out.collect()
    message = str(failure.value)
    for part in ("InputError", "step 'keyed'", "null or NaN key", "df.na.drop"):
        assert part in message, f"{part!r} missing from: {message[:2000]}"
