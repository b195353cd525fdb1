"""Rescaling a packed checkpoint that ``sw.start`` never recorded (a query
started with a plain ``writeStream.start``, such as ``sparkwax demo``'s):
its bucket count comes from the state rows, its key columns' types from
the stored keys (checked against the buckets they are in), and the result
says so; the restarted query keeps every key."""

import pytest

import sparkwax as sw
from sparkwax.cli import main
from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.engine.checkpoints.state.rescale import rescale
from sparkwax.testing import Batch, run

from kit import state_cli
from test_rescale import _by_key, _events, _offline, _write, growing_app  # noqa: F401
from spark_confs import confs


def _plain_run(spark, frame, checkpoint, out=None):
    """``frame`` to Parquet (or noop) with a plain writeStream, batches until done."""
    writer = frame.writeStream.option("checkpointLocation", checkpoint).trigger(
        availableNow=True)
    writer = writer.format("parquet").option("path", out) if out else writer.format("noop")
    writer.start().awaitTermination(300)


def _derived_line(result, checkpoint, buckets, key):
    return (f"{checkpoint} has no sparkwax-steps.json record of the packed step (it was not "
            f"started with sw.start): {buckets} buckets derived from its state rows, key "
            f"columns {key!r} from the stored keys")


def test_a_packed_checkpoint_without_a_record_is_rescaled_and_keeps_every_key(spark,
                                                                              tmp_path):
    batches = _events()
    for number in (0, 1):
        _write(tmp_path / "in", number, batches[number])
    checkpoint, out = str(tmp_path / "ck"), str(tmp_path / "out")
    _plain_run(spark, growing_app.build(spark, str(tmp_path / "in"), "packed"), checkpoint, out)
    assert not (tmp_path / "ck" / "sparkwax-steps.json").exists()
    before = {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)}

    # (the file sink's folder, which only sw.start records: its log gets the rescale batch)
    result = rescale(checkpoint, 5, sink=out, spark=spark, idle_seconds=0)
    assert (result.partitions, result.buckets) == ((2, 5), (8, 20))
    assert result.derived == _derived_line(result, checkpoint, 8, "key string")
    assert str(result).endswith("\n" + result.derived)
    assert {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)} == before
    with confs(spark, {"spark.sql.shuffle.partitions": "5"}):  # default buckets: 4 x 5
        for number in (2, 3):
            _write(tmp_path / "in", number, batches[number])
        _plain_run(spark, growing_app.build(spark, str(tmp_path / "in"), "packed"),
                   checkpoint, out)
    assert _by_key(spark.read.parquet(out).collect()) == _offline(batches)


class Sum(sw.StatefulLogic):
    def __init__(self, resume=None):
        self.total = resume or 0

    def on_item(self, value):
        self.total += value
        return [self.total], sw.RETAIN

    def snapshot(self):
        return self.total


def test_int_keys_are_found_as_int_not_bigint(spark, tmp_path):
    """A Python int key may be an ``int`` or a ``bigint`` column, which hash
    into different buckets: the one that puts every stored key into its own
    bucket is taken (bigint would scatter them, and the restart would not
    find them)."""
    source = tmp_path / "in"
    source.mkdir()

    def step():
        stream = spark.readStream.schema("k int, v long").json(str(source))
        return sw.stateful(stream, key="k", builder=Sum, value="v", output_schema="total long",
                           step_id="sums", host="packed")

    (source / "0.json").write_text("".join(f'{{"k": {k}, "v": {k}}}\n' for k in range(40)))
    checkpoint = str(tmp_path / "ck")
    _plain_run(spark, step(), checkpoint)
    result = rescale(checkpoint, 3, spark=spark, idle_seconds=0)
    assert result.buckets == (8, 12)
    assert result.derived == _derived_line(result, checkpoint, 8, "key int")
    with confs(spark, {"spark.sql.shuffle.partitions": "3"}):
        (source / "1.json").write_text("".join(f'{{"k": {k}, "v": 1}}\n' for k in range(40)))
        _plain_run(spark, step(), checkpoint)
    assert {e.key: e.snapshot for e in read_entries(spark, checkpoint)} == {
        k: k + 1 for k in range(40)}  # every key continued its sum


@pytest.mark.slow
def test_the_demos_checkpoint_is_named_and_rescaled(spark, tmp_path, capsys):
    output = tmp_path / "out"
    assert main(["demo", "--events", "1500", "--batches", "2", "--output", str(output),
                 "--host", "packed", "--master", "local[2]"]) == 0
    folder = str(output / "checkpoints")
    capsys.readouterr()
    assert state_cli(["show", folder]) == 2  # the folder the demo prints
    assert (f"{folder!r} is not a streaming checkpoint; it holds the checkpoints of 2 "
            f"queries: {folder}/alerts, {folder}/sessions") in capsys.readouterr().err
    sessions = f"{folder}/sessions"
    before = {e.key: e.snapshot for e in read_entries(spark, sessions)}
    assert state_cli(["rescale", sessions, "--partitions", "3", "--force"]) == 0
    said = capsys.readouterr().out
    assert f"rescaled {sessions}: state partitions" in said
    assert "buckets derived from its state rows, key columns 'key string'" in said, said
    assert {e.key: e.snapshot for e in read_entries(spark, sessions)} == before and before
