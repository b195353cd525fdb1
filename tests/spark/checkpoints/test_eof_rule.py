"""EOF on Spark and offline agree: ``finish`` runs on_eof without changing the
checkpoint, so a stream restarted after it continues from the state before
EOF; offline, ``Eof()`` ends a run and a step after it is refused."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.errors import ConfigError
from sparkwax.testing.spark import run_script_on_spark
from sparkwax.testing import Batch, Eof, run

from kit import T0, item

INPUT = "key string, ts timestamp, value long"
OUTPUT = "kind string, total long"
TIME = sw.EventTime("ts", watermark="1 hour")


class FlushOnEof(sw.StatefulLogic):
    """A running total that on_eof flushes and DISCARDs: a stream that kept
    what on_eof committed would start again from 0."""

    def __init__(self, resume=None):
        self.total = resume or 0

    def on_item(self, value):
        self.total += value["value"]
        return [("item", self.total)], sw.RETAIN

    def on_eof(self):
        return [("eof", self.total)], sw.DISCARD

    def snapshot(self):
        return self.total


BEFORE = [Batch([item("a", 0, 1), item("b", 1, 2)]), Batch([item("a", 2, 3)])]
AFTER = [Batch([item("a", 3, 10), item("b", 4, 20)])]


def test_finish_leaves_the_checkpoint_and_a_restart_continues_from_before_eof(spark, tmp_path):
    run_script_on_spark(spark, FlushOnEof, BEFORE, input_schema=INPUT, output_schema=OUTPUT,
                        time=TIME, workdir=str(tmp_path))
    checkpoint = str(tmp_path / "checkpoint")
    ends = sw.finish(checkpoint, builder=FlushOnEof, output_schema=OUTPUT, time=TIME)
    assert sorted(tuple(r) for r in ends.collect()) == [("a", "eof", 4), ("b", "eof", 2)]
    # the same stream, restarted on the same checkpoint with one more batch
    again = run_script_on_spark(spark, FlushOnEof, BEFORE + AFTER, input_schema=INPUT,
                                output_schema=OUTPUT, time=TIME, workdir=str(tmp_path))
    got = {k: [tuple(v) for v in vs] for k, vs in again.by_key.items()}
    offline_before = run(FlushOnEof, BEFORE, time=TIME).by_key
    offline_all = run(FlushOnEof, BEFORE + AFTER, time=TIME).by_key
    assert got == {k: vs[len(offline_before.get(k, [])):] for k, vs in offline_all.items()}
    assert got == {"a": [("item", 14)], "b": [("item", 22)]}   # not 10 and 20
    # offline, building on what on_eof committed is refused
    with pytest.raises(ConfigError, match="continues from the state before EOF"):
        run(FlushOnEof, BEFORE + [Eof()] + AFTER, time=TIME)
