"""sparkwax on Spark: per-key and packed hosts vs bare AIPWS, groupBy().count(), Bytewax.

    python benchmarks/spark_engine.py [--rows N] [--cases 100/100 10000/10000 ...]
        [--repeat R] [--warmup W] [--variants ...] [--state-store hdfs|rocksdb]
        [--pad BYTES] [--conf NAME=VALUE ...] [--quick] [--sparse]

Setup: ``sparkwax.local_session("local[2]")`` (2 shuffle partitions, HDFS
state store unless --state-store rocksdb). A case ``T/N`` is (keys touched
per micro-batch / keys total), ``T/N/R`` also sets its rows per micro-batch (default --rows):
batch 0 holds each of the N keys once (it creates every key's state and is
not measured: query start-up, JIT and worker warm-up); then --warmup rounds
(default 1: the first batch after batch 0 was the slowest of every variant in
every run) and --repeat (default 5) measured rounds, one micro-batch of R rows
per variant each, over T of the N keys (round r touches keys
``(i % T) * (N // T) + r``: a different subset each round when T < N, every
key when T = N). Each variant runs as one streaming query over its own parquet
directory with ``maxFilesPerTrigger=1`` and the ``noop`` sink; the rounds drop
the same file into every variant's directory in a rotating order (so load
that drifts on a shared machine hits all alike), each processed as one
micro-batch by ``processAllAvailable()``. Measured per batch:
``durationMs.triggerExecution`` (the batch itself) and the CPU time of the JVM
and its Python workers (read from /proc: steadier than wall time under other
load). Best and median of R. (A full JVM GC before each batch did not make
the figures steadier: groupBy.count still spread 680-1,310 ms of CPU.)

Variants (each stateful one keeps a running count per key):

* ``bare``         hand-written applyInPandasWithState: state = one binary
                   column holding pickle.dumps(int); ``len(pdf)`` per chunk;
                   one 1-row frame out per key (the count).
* ``bare-again``   a second query of ``bare`` (an A/A check: how far a
                   ratio of two identical queries strays in one run).
* ``sparkwax``     ``sw.stateful_batch(value="v")``, per-key host, a
                   StatefulBatchLogic adding ``len(values)`` and emitting the
                   count (sparkwax.testing.reference.BatchCounter).
* ``sw-packed``    the same with ``host="packed"`` (4 x shuffle partitions
                   buckets).
* ``sw-packed-rows`` sw-packed with ``spark.sparkwax.packed.prepack=false``:
                   its rows cross the shuffle one by one, not packed per
                   bucket first (the packed host before engine/hosts/prepack.py).
* ``sw-per-item``  ``sw.stateful(value="v")``, per-key host, the per-item
                   ``Count`` logic below (one Python call per row, no emits).
* ``sw-packed-per-item`` the same ``Count`` with ``host="packed"``.
* ``bare-packed``  the hand-written floor of a packed design: applyInPandasWithState
                   grouped by sw-packed's bucket (``pmod(xxhash64(key), 8)``),
                   state = one pickled ``{key: count}`` dict per bucket,
                   ``np.unique`` over the batch's keys, one ``(key, count)``
                   row out per touched key. No per-key objects, snapshots or
                   checks: what sw-packed pays over it is sparkwax's own
                   per-key work (column ``cpu vs bpk``).
* ``bare-prepacked`` bare-packed with the rows packed before the shuffle: a
                   ``mapInArrow`` turns each Arrow batch into one Arrow IPC
                   payload per bucket, so the shuffle, its sort and the trip to
                   Python move ~8 rows per 10k-row batch, not 10k (a design
                   probe: can a packed host get under bare-packed?).
* ``groupBy.count`` streaming ``groupBy(key).count()`` in update mode (the
                   JVM's own stateful aggregation; no Python).
* ``tws``          transformWithStateInPandas (Spark 4's stateful API, the
                   peer a Spark user picks instead): a ValueState ``n long``
                   per key, one 1-row frame out per key; always on the
                   RocksDB state store (TWS needs it; the query's own conf).
* ``*-timer``      ``bare-timer``, ``sparkwax-timer``, ``sw-packed-timer``,
                   ``tws-timer``: the same counts over ``withWatermark("ts",
                   "1 hour")``, each key also (re-)arming an event-time timer
                   one day past its latest event (``t``, epoch ms; rounds are a
                   minute apart, so no timer fires): bare with
                   ``EventTimeTimeout`` + ``setTimeoutTimestamp``; sparkwax
                   with ``time=EventTime("ts")`` and a ``notify_at``; TWS with
                   ``timeMode="EventTime"``, the due time kept in the
                   ValueState (one deleteTimer + one registerTimer per key).
                   Spark's no-data batches are off (the watermark would add a
                   second batch per file).
* ``sw-tws-per-item``, ``sw-packed-tws-per-item`` ``sw-per-item`` and
                   ``sw-packed-per-item`` on the host a step after another
                   runs on (transformWithStateInPandas around the same host;
                   an empty ``seed=`` puts a first step there); RocksDB.
* ``sw-2step``, ``sw-2step-packed`` two steps in one query: a pass-through
                   (each value on, no state), then ``Count``; RocksDB.
* ``sw-chain``, ``sw-chain-packed`` the same two logics as one step,
                   ``sw.chain(Forward, Count)`` (the second stage gets the
                   first's emits in the same activation; each stage counted in
                   the progress, ``sparkwax-stage:<step>/<stage>``).
* ``bytewax``      Bytewax 0.21.1 (``run_main``, one worker, in this process)
                   running the same ``Count`` class (``op.stateful``) over the
                   same items as round 0's micro-batch (key as str); its
                   state lives in memory, so the N - T untouched keys cost it
                   nothing; wall time and this process's CPU time, best of R.

Per-key variants are skipped when N > --max-per-key-total (default 100k):
creating N per-key state rows costs ~0.6 ms each on an idle machine (1M
keys: ~10 min per variant), and 1M per-key rows need --state-store rocksdb.

The table's ratios are on the best batch (wall, and CPU of the JVM + Python
workers): ``variant / bare``, ``/ groupBy.count``, ``/ tws`` (a -timer
variant's bare and tws are the -timer ones). The goals are judged on the
median of paired per-round ratios (``engine_goals.py``): steadier than a
ratio of best batches, which flipped goals between runs. Goals (issue 24):
per-key <= 1.10 x bare CPU (1.15 with timers), packed <= 1.0 x bare at 100
keys and <= 2.5 x groupBy().count() CPU at 10k-100k keys; a 20-row batch
(``--cases 10/10/20``) <= 1.05 x bare; the run ends with each goal it can
judge, met or not, then the floor and A/A lines (``engine_goals.floors``).
``--sparse [--quick]``: 1k keys touched of 1M (100k) held with 1 KB
snapshots vs the same batch with 1k keys held.
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sparkwax as sw  # noqa: E402
from datetime import timedelta  # noqa: E402

from pyspark.sql.streaming.stateful_processor import StatefulProcessor  # noqa: E402

from sparkwax.logic import DISCARD, RETAIN, StatefulBatchLogic, StatefulLogic  # noqa: E402
from sparkwax.timers import EPOCH  # noqa: E402
from sparkwax.testing.reference import BatchCounter  # noqa: E402

from engine_goals import check as check_goals, floors  # noqa: E402  (in benchmarks/)
from proc_cpu import tree_cpu  # noqa: E402

_BASE_MTIME = 1_600_000_000
_BASE_EVENT_MS = 1_700_000_000_000  # event time of batch 0; each round is a minute later
DAY_MS = 86_400_000  # timers of the -timer variants: a day past the key's last event
WATERMARK = "1 hour"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


class Count(StatefulLogic):
    """Counts in on_item, emits nothing per item, the count at EOF. The same
    class runs on sparkwax and on Bytewax (it has Bytewax's method names)."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return (), RETAIN

    def on_eof(self):
        return [self.n], DISCARD

    def snapshot(self):
        return self.n



class Forward(StatefulLogic):
    """Passes each value on and keeps nothing (the first of sw-2step's steps)."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [(value,)], DISCARD

    def snapshot(self):
        return None


def bare_count_timer(key, pdfs, state):
    """bare_count plus an event-time timeout per key: one day past the key's
    latest event (``t``, epoch ms); it never fires during a run."""
    import pandas as pd

    if state.hasTimedOut:  # never here
        state.remove()
        return
    n = pickle.loads(state.get[0]) if state.exists else 0
    last = 0
    for pdf in pdfs:
        n += len(pdf)
        last = max(last, int(pdf["t"].max()))
    state.update((pickle.dumps(n),))
    state.setTimeoutTimestamp(last + DAY_MS)
    yield pd.DataFrame({"key": [key[0]], "count": [n]})


class BatchTimerCounter(StatefulBatchLogic):
    """BatchCounter plus a timer one day past the key's latest event (``t``)."""

    def __init__(self, resume=None):
        self.count, self.last = resume or (0, 0)

    def on_batch(self, values):
        self.count += len(values)
        self.last = max(self.last, max(values))
        return [self.count], RETAIN

    def notify_at(self):
        return EPOCH + timedelta(milliseconds=self.last + DAY_MS)

    def on_notify(self):  # never here
        return [], DISCARD

    def snapshot(self):
        return (self.count, self.last)


class TwsCount(StatefulProcessor):
    """transformWithStateInPandas count: a ValueState ``n long`` per key."""

    def init(self, handle):
        self.state = handle.getValueState("n", "n long")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        n = self.state.get()[0] if self.state.exists() else 0
        for pdf in rows:
            n += len(pdf)
        self.state.update((n,))
        yield pd.DataFrame({"key": [key[0]], "count": [n]})

    def close(self):
        pass


class TwsTimerCount(StatefulProcessor):
    """TwsCount plus an event-time timer one day past the key's latest event:
    the timer's time is kept in the ValueState, so re-arming is one
    deleteTimer and one registerTimer (no listTimers)."""

    def init(self, handle):
        self.handle = handle
        self.state = handle.getValueState("n", "n long, due long")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        n, due = self.state.get() if self.state.exists() else (0, None)
        last = 0
        for pdf in rows:
            n += len(pdf)
            last = max(last, int(pdf["t"].max()))
        new_due = last + DAY_MS
        if due != new_due:
            if due is not None:
                self.handle.deleteTimer(due)
            self.handle.registerTimer(new_due)
        self.state.update((n, new_due))
        yield pd.DataFrame({"key": [key[0]], "count": [n]})

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # never here
        self.state.clear()
        return iter([])

    def close(self):
        pass


def bare_packed_count(bucket, pdfs, state):
    """bare-packed: a bucket's ``{key: count}`` dict, pickled whole."""
    yield from _count_bucket([pdf["key"].to_numpy() for pdf in pdfs], state)


def _count_bucket(keys, state):
    """The bucket's ``{key: count}`` dict counting ``keys`` (numpy arrays),
    pickled whole; one ``(key, count)`` row out per key touched."""
    import numpy as np
    import pandas as pd

    if not keys:
        return
    counts = pickle.loads(state.get[0]) if state.exists else {}
    touched, seen = np.unique(np.concatenate(keys), return_counts=True)
    out = []
    for key, n in zip(touched.tolist(), seen.tolist()):
        counts[key] = total = counts.get(key, 0) + n
        out.append(total)
    state.update((pickle.dumps(counts),))
    yield pd.DataFrame({"key": touched, "count": out})


def prepack_rows(batches):
    """bare-prepacked, before the shuffle (``mapInArrow``): each Arrow batch's
    rows as one Arrow IPC payload per bucket, so rows cross the shuffle, the
    sort and the trip to Python by the bucket-batch, not one by one."""
    import numpy as np
    import pyarrow as pa

    for batch in batches:
        buckets = batch.column("bucket").to_numpy()
        order = np.argsort(buckets, kind="stable")
        ordered = buckets[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], len(order)]
        rows = batch.select(["key", "v"]).take(pa.array(order))
        heads, payloads = [], []
        for start, end in zip(starts.tolist(), ends.tolist()):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, rows.schema) as writer:
                writer.write_batch(rows.slice(start, end - start))
            heads.append(int(ordered[start]))
            payloads.append(sink.getvalue().to_pybytes())
        yield pa.RecordBatch.from_arrays([pa.array(heads, pa.int64()), pa.array(payloads,
                                                                                 pa.binary())],
                                         names=["bucket", "payload"])


def bare_prepacked_count(bucket, pdfs, state):
    """bare-prepacked, after the shuffle: bare-packed's count over the payloads' keys."""
    import pyarrow as pa

    yield from _count_bucket([pa.ipc.open_stream(payload).read_all().column("key").to_numpy()
                              for pdf in pdfs for payload in pdf["payload"]], state)


def bare_count(key, pdfs, state):
    """The hand-written floor: pickled int state, len(pdf) per chunk."""
    import pandas as pd

    n = pickle.loads(state.get[0]) if state.exists else 0
    for pdf in pdfs:
        n += len(pdf)
    state.update((pickle.dumps(n),))
    yield pd.DataFrame({"key": [key[0]], "count": [n]})


def padded_bare(pad: int):
    """bare_count whose state also holds ``pad`` random bytes (--pad)."""
    def bare_count_padded(key, pdfs, state):
        import pandas as pd

        n = pickle.loads(state.get[0])[0] if state.exists else 0
        for pdf in pdfs:
            n += len(pdf)
        state.update((pickle.dumps((n, os.urandom(pad))),))
        yield pd.DataFrame({"key": [key[0]], "count": [n]})
    return bare_count_padded


class PaddedCounter(StatefulBatchLogic):
    """BatchCounter whose snapshot also holds ``pad`` random bytes (--pad):
    incompressible, new each activation, like a real key's state."""

    pad = 0

    def __init__(self, resume=None):
        self.count = resume[0] if resume else 0

    def on_batch(self, values):
        self.count += len(values)
        return [self.count], RETAIN

    def snapshot(self):
        return (self.count, os.urandom(self.pad))


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and its descendants, including their
    reaped children (NaN without /proc)."""
    table = tree_cpu(root)
    return sum(own + reaped for own, reaped in table.values()) if table else float("nan")


def jvm_pid(spark):
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return getattr(proc, "pid", None)


PER_KEY = {"bare", "bare-again", "sparkwax", "sw-per-item", "tws", "bare-timer",
           "sparkwax-timer", "tws-timer", "sw-tws-per-item", "sw-2step", "sw-chain"}
# the hosts of a step after another (transformWithStateInPandas: RocksDB only)
FOLLOWING = {"sw-tws-per-item", "sw-packed-tws-per-item", "sw-2step", "sw-2step-packed"}
VARIANTS = ["bare", "bare-again", "sparkwax", "sw-packed", "sw-packed-rows", "sw-per-item",
            "sw-packed-per-item", "bare-packed", "bare-prepacked", "groupBy.count", "tws",
            "bare-timer", "sparkwax-timer", "sw-packed-timer", "tws-timer", "bytewax",
            *sorted(FOLLOWING), "sw-chain", "sw-chain-packed"]
DEFAULT_VARIANTS = ["bare", "sparkwax", "sw-packed", "bare-packed", "groupBy.count", "tws",
                    "bare-timer", "sparkwax-timer", "sw-packed-timer", "tws-timer"]


def write_keys(spark, path: str, rows: int, touched: int, total: int, round_: int) -> str:
    """One parquet file of ``rows`` rows (key long, v long) over ``touched`` of
    ``total`` keys, in random order; round_ < 0: every key once (batch 0)."""
    from pyspark.sql import functions as F

    if round_ < 0:
        df = spark.range(total).select(F.col("id").alias("key"), F.col("id").alias("v"))
    else:
        stride = total // touched
        key = ((F.col("id") % touched) * stride + round_ % stride) % total
        df = spark.range(rows).select(key.alias("key"), F.col("id").alias("v"))
    # t: event time in epoch ms (a minute later each round, rows spread over
    # a second), ts: the same as a timestamp (the -timer variants' event time)
    t = F.lit(_BASE_EVENT_MS + (round_ + 1) * 60_000) + F.col("v") % 1000
    df = df.select("key", "v", t.alias("t"), F.timestamp_millis(t).alias("ts"))
    df.orderBy(F.rand(round_)).coalesce(1).write.mode("overwrite").parquet(path)
    (part,) = [f for f in os.listdir(path) if f.endswith(".parquet")]
    return os.path.join(path, part)


def build(spark, variant: str, source: str):
    timer = variant.endswith("-timer")
    schema = "key long, v long, t long, ts timestamp" if timer else "key long, v long"
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(source)
    if variant in ("bare", "bare-again"):
        return stream.groupBy("key").applyInPandasWithState(
            padded_bare(PaddedCounter.pad) if PaddedCounter.pad else bare_count,
            outputStructType="key long, count long", stateStructType="s binary",
            outputMode="append", timeoutConf="NoTimeout"), "append"
    if variant == "bare-timer":
        return stream.withWatermark("ts", WATERMARK).groupBy("key").applyInPandasWithState(
            bare_count_timer, outputStructType="key long, count long",
            stateStructType="s binary", outputMode="append",
            timeoutConf="EventTimeTimeout"), "append"
    if variant in ("tws", "tws-timer"):
        if timer:
            stream = stream.withWatermark("ts", WATERMARK)
        return stream.groupBy("key").transformWithStateInPandas(
            TwsTimerCount() if timer else TwsCount(), outputStructType="key long, count long",
            outputMode="append", timeMode="EventTime" if timer else "None"), "append"
    if variant in ("sparkwax", "sw-packed"):
        host = "packed" if variant == "sw-packed" else "per_key"
        builder = PaddedCounter if PaddedCounter.pad else BatchCounter
        return sw.stateful_batch(stream, key="key", builder=builder, value="v",
                                 output_schema="count long", host=host), "append"
    if variant == "sw-packed-rows":
        conf = stream.sparkSession.conf
        conf.set("spark.sparkwax.packed.prepack", "false")  # read while the step is planned
        try:
            return sw.stateful_batch(stream, key="key", builder=BatchCounter, value="v",
                                     output_schema="count long", host="packed"), "append"
        finally:
            conf.unset("spark.sparkwax.packed.prepack")
    if variant in ("sparkwax-timer", "sw-packed-timer"):
        host = "packed" if variant == "sw-packed-timer" else "per_key"
        return sw.stateful_batch(stream, key="key", builder=BatchTimerCounter, value="t",
                                 output_schema="count long", host=host,
                                 time=sw.EventTime("ts", watermark=WATERMARK)), "append"
    if variant in ("sw-per-item", "sw-packed-per-item"):
        host = "packed" if variant == "sw-packed-per-item" else "per_key"
        return sw.stateful(stream, key="key", builder=Count, value="v",
                           output_schema="count long", host=host), "append"
    if variant in ("sw-tws-per-item", "sw-packed-tws-per-item"):
        # the per-item Count on the host a following step runs on (an empty
        # seed puts a first step there: the same host, measured alone)
        host = "packed" if "packed" in variant else "per_key"
        empty = sw.seed_frame(stream.sparkSession, {}, "key long")
        return sw.stateful(stream, key="key", builder=Count, value="v",
                           output_schema="count long", host=host, seed=empty), "append"
    if variant in ("sw-2step", "sw-2step-packed"):
        # a pass-through step (each value on, no state), then the per-item Count
        host = "packed" if variant.endswith("packed") else "per_key"
        passed = sw.stateful(stream, key="key", builder=Forward, value="v",
                             output_schema="v long", host=host, step_id="forward")
        return sw.stateful(passed, key="key", builder=Count, value="v",
                           output_schema="count long", host=host, step_id="count"), "append"
    if variant in ("sw-chain", "sw-chain-packed"):
        host = "packed" if variant.endswith("packed") else "per_key"
        chained = sw.chain(sw.Step.of(Forward, step_id="forward"),
                           sw.Step.of(Count, step_id="count"))
        return sw.stateful(stream, key="key", builder=chained, value="v",
                           output_schema="count long", host=host, step_id="chain"), "append"
    if variant == "bare-packed":
        from pyspark.sql import functions as F

        bucket = F.pmod(F.xxhash64("key"), F.lit(8)).alias("bucket")
        return stream.select("key", "v", bucket).groupBy("bucket").applyInPandasWithState(
            bare_packed_count, outputStructType="key long, count long",
            stateStructType="s binary", outputMode="append", timeoutConf="NoTimeout"), "append"
    if variant == "bare-prepacked":
        from pyspark.sql import functions as F

        bucket = F.pmod(F.xxhash64("key"), F.lit(8)).alias("bucket")
        prepacked = stream.select("key", "v", bucket).mapInArrow(
            prepack_rows, "bucket long, payload binary")
        return prepacked.groupBy("bucket").applyInPandasWithState(
            bare_prepacked_count, outputStructType="key long, count long",
            stateStructType="s binary", outputMode="append", timeoutConf="NoTimeout"), "append"
    if variant == "groupBy.count":
        return stream.groupBy("key").count(), "update"
    raise ValueError(variant)


def drop_file(parquet: str, source: str, number: int) -> None:
    staging = os.path.join(os.path.dirname(source), f"staging-{number:04d}.parquet")
    shutil.copyfile(parquet, staging)
    os.utime(staging, (_BASE_MTIME + number,) * 2)
    os.replace(staging, os.path.join(source, f"part-{number:04d}.parquet"))


class Query:
    """One variant's streaming query over its own input directory."""

    def __init__(self, spark, variant: str, first: str, workdir: str, trigger: str):
        self.variant = variant
        run_dir = tempfile.mkdtemp(prefix=f"{variant.replace('.', '_')}-", dir=workdir)
        self.source = os.path.join(run_dir, "input")
        os.makedirs(self.source)
        self.files = 0
        self.drop(first)
        out, mode = build(spark, variant, self.source)
        # transformWithState needs RocksDB; a query keeps the provider it
        # started with (a session conf of the query's own cloned session).
        provider = "spark.sql.streaming.stateStore.providerClass"
        before = spark.conf.get(provider, None)
        if variant.startswith("tws") or variant in FOLLOWING:
            spark.conf.set(provider, ROCKSDB)
        try:
            self.query = out.writeStream.format("noop").outputMode(mode) \
                .trigger(processingTime=trigger) \
                .option("checkpointLocation", os.path.join(run_dir, "checkpoint")).start()
        finally:
            if before is None:
                spark.conf.unset(provider)
            else:
                spark.conf.set(provider, before)
        self.query.processAllAvailable()  # batch 0: start-up + warm-up, every key new
        self.warmup_ms = self.query.lastProgress["durationMs"]["triggerExecution"]
        self.trigger_ms, self.cpu_ms = [], []

    def drop(self, parquet: str) -> None:
        drop_file(parquet, self.source, self.files)
        self.files += 1

    def batch(self, parquet: str, root) -> None:
        """One more file: one measured micro-batch."""
        cpu = tree_cpu_seconds(root)
        self.drop(parquet)
        self.query.processAllAvailable()
        self.cpu_ms.append((tree_cpu_seconds(root) - cpu) * 1000)
        progress = self.query.lastProgress
        assert progress["numInputRows"] > 0, progress
        self.trigger_ms.append(progress["durationMs"]["triggerExecution"])

    def stop(self) -> None:
        self.query.stop()


class Bytewax:
    """Bytewax 0.21.1 on the items of a parquet file, in this process."""

    variant = "bytewax"
    warmup_ms = float("nan")

    def __init__(self):
        self.trigger_ms, self.cpu_ms, self.items = [], [], {}

    def batch(self, parquet: str, root=None) -> None:
        import pandas as pd
        import bytewax.operators as op
        from bytewax.dataflow import Dataflow
        from bytewax.testing import TestingSink, TestingSource, run_main

        if parquet not in self.items:
            frame = pd.read_parquet(parquet)
            self.items = {parquet: list(zip(frame["key"].astype(str).tolist(),
                                            frame["v"].tolist()))}
        flow = Dataflow("count")
        stream = op.input("in", flow, TestingSource(self.items[parquet], batch_size=10_000))
        counted = op.stateful("count", stream, Count)
        out = []
        op.output("out", counted, TestingSink(out))
        cpu, wall = time.process_time(), time.perf_counter()
        run_main(flow)
        self.trigger_ms.append(round((time.perf_counter() - wall) * 1000))
        self.cpu_ms.append((time.process_time() - cpu) * 1000)
        assert len(out) == len({k for k, _ in self.items[parquet]}), len(out)

    def stop(self) -> None:
        pass


def run_case(spark, root, workdir, touched, total, rows, args):
    files = [write_keys(spark, os.path.join(workdir, f"data-{touched}-{total}-{r}"),
                        rows, touched, total, r) for r in range(-1, args.warmup + args.repeat)]
    runners = []
    try:
        for variant in args.variants:
            if variant in PER_KEY and total > args.max_per_key_total:
                print(f"  {touched}/{total} {variant}: skipped ({total:,} per-key state rows "
                      f"to create)", flush=True)
            elif variant == "bytewax":
                runners.append(Bytewax())
            else:
                runners.append(Query(spark, variant, files[0], workdir, args.trigger))
        # Interleaved rounds (rotating order): load that drifts on a shared
        # machine, JIT warm-up and GC hit every variant alike.
        for round_, parquet in enumerate(files[1:]):
            shift = round_ % len(runners)
            for runner in runners[shift:] + runners[:shift]:
                runner.batch(parquet if runner.variant != "bytewax" else files[1], root)
    finally:
        for runner in runners:
            runner.stop()
    for runner in runners:
        warm_ms, warm_cpu = runner.trigger_ms[:args.warmup], runner.cpu_ms[:args.warmup]
        del runner.trigger_ms[:args.warmup], runner.cpu_ms[:args.warmup]
        print(f"  {touched}/{total} {runner.variant:<19} batch 0 {runner.warmup_ms:>8,.0f} ms, "
              f"warm-up {warm_ms} ms (cpu {[round(c) for c in warm_cpu]}), "
              f"batches {runner.trigger_ms} ms, cpu {[round(c) for c in runner.cpu_ms]}",
              flush=True)
    return {runner.variant: runner for runner in runners}


def peer(variant: str, base: str) -> str:
    """The variant a ratio divides by: a -timer variant's peer is the -timer
    variant of ``base`` (bare, tws); groupBy.count and bytewax have none."""
    if variant.endswith("-timer") and base in ("bare", "tws", "bare-packed"):
        return base + "-timer"  # (there is no bare-packed-timer: no ratio)
    return base


def report(results, args) -> None:
    print()
    header = (f"{'touched/total':>15} {'rows':>9} {'variant':<19} {'batch ms':>9} {'med ms':>7} "
              f"{'vs bare':>7} {'vs count':>8} {'vs tws':>6} {'vs bytewax':>10} | "
              f"{'cpu ms':>7} {'med':>7} {'vs bare':>7} {'vs count':>8} {'vs tws':>6} "
              f"{'vs bpk':>6}")
    print(header)
    print("-" * len(header))
    for (touched, total, rows), runners in results.items():
        best = {v: min(r.trigger_ms) for v, r in runners.items()}
        cpu = {v: min(r.cpu_ms) for v, r in runners.items()}

        def ratio(variant, base, table):
            base = peer(variant, base)
            return f"{table[variant] / table[base]:.2f}" if base in table else "-"

        for variant, runner in runners.items():
            print(f"{f'{touched:,}/{total:,}':>15} {rows:>9,} {variant:<19} "
                  f"{best[variant]:>9,} {statistics.median(runner.trigger_ms):>7,.0f} "
                  f"{ratio(variant, 'bare', best):>7} {ratio(variant, 'groupBy.count', best):>8} "
                  f"{ratio(variant, 'tws', best):>6} {ratio(variant, 'bytewax', best):>10} | "
                  f"{cpu[variant]:>7,.0f} {statistics.median(runner.cpu_ms):>7,.0f} "
                  f"{ratio(variant, 'bare', cpu):>7} {ratio(variant, 'groupBy.count', cpu):>8} "
                  f"{ratio(variant, 'tws', cpu):>6} {ratio(variant, 'bare-packed', cpu):>6}")
    print("batch ms = best durationMs.triggerExecution of the measured batches (bytewax: "
          "run_main wall time); cpu ms = CPU of the JVM + Python workers\n(bytewax: this "
          "process) during the batch, best (and median); ratios on the best; a -timer "
          "variant's 'bare' and 'tws' are bare-timer and tws-timer; bpk = bare-packed")
    rounds = {case: {v: (r.trigger_ms, r.cpu_ms) for v, r in runners.items()}
              for case, runners in results.items()}
    goals = check_goals(rounds)
    if goals:
        print(f"\ngoals of issue 24 ({sum(g.met for g in goals)} of {len(goals)} met in this run; "
              f"median of {args.repeat} paired per-round ratios):")
        for goal in goals:
            print(f"  {goal}")
        for line in floors(rounds):
            print(f"  {line}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per micro-batch")
    parser.add_argument("--cases", nargs="*", default=["100/100", "10000/10000",
                                                       "1000/1000000", "100/100000/10000"],
                        metavar="TOUCHED/TOTAL[/ROWS]")
    parser.add_argument("--repeat", type=int, default=5, help="measured batches per variant")
    parser.add_argument("--warmup", type=int, default=1,
                        help="batches per variant after batch 0 that are not measured")
    parser.add_argument("--conf", nargs="*", default=[], metavar="NAME=VALUE",
                        help="Spark confs of the session (e.g. "
                             "spark.sql.execution.arrow.maxRecordsPerBatch=100000)")
    parser.add_argument("--variants", nargs="*", default=DEFAULT_VARIANTS, choices=VARIANTS)
    parser.add_argument("--max-per-key-total", type=int, default=100_000)
    parser.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="hdfs",
                        help="per-key variants with 1M keys need rocksdb: the HDFS store keeps "
                             "every row of the last versions in the 1 GB default heap")
    parser.add_argument("--trigger", default="500 milliseconds",
                        help="processing-time trigger of every query (idle queries then "
                             "poll rarely; the wait is not part of the batch time)")
    parser.add_argument("--pad", type=int, default=0,
                        help="bare, sparkwax and sw-packed keep this many random bytes per "
                             "key in their state besides the count (the sparse-state case: "
                             "--pad 1000)")
    parser.add_argument("--sparse", action="store_true",
                        help="the sparse-state case: 1k keys touched of 1M held vs the same "
                             "batch with 1k keys held, 1 KB snapshots, RocksDB, variants bare "
                             "sparkwax sw-packed (with --quick: of 100k held)")
    parser.add_argument("--quick", action="store_true",
                        help="200k rows, 2 measured batches, cases 100/100 and 10000/10000")
    args = parser.parse_args(argv)
    if args.sparse:
        held = 100_000 if args.quick else 1_000_000
        args.cases = ["1000/1000/100000", f"1000/{held}/100000"]
        args.pad, args.state_store = args.pad or 1000, "rocksdb"
        args.max_per_key_total = max(args.max_per_key_total, held)
        if args.variants == DEFAULT_VARIANTS:
            args.variants = ["bare", "sparkwax", "sw-packed"]
    elif args.quick:
        args.rows, args.repeat, args.cases = 200_000, 2, ["100/100", "10000/10000"]
    PaddedCounter.pad = args.pad
    cases = [tuple(int(x) for x in case.split("/")) for case in args.cases]
    cases = [case if len(case) == 3 else case + (args.rows,) for case in cases]

    started = time.perf_counter()
    spark = sw.local_session("local[2]", shuffle_partitions=2, state_store=args.state_store,
                             conf=dict(item.split("=", 1) for item in args.conf))
    # A watermark makes Spark run a no-data batch after each data batch (to
    # advance it); the -timer variants' timers never fire, so it is off: one
    # measured batch per file for every variant.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    root = jvm_pid(spark)
    workdir = tempfile.mkdtemp(prefix="sparkwax-bench-")
    print(f"Spark {spark.version}, local[2], shuffle partitions "
          f"{spark.conf.get('spark.sql.shuffle.partitions')}, {args.rows:,} rows per "
          f"micro-batch, {args.repeat} measured batches after batch 0 and {args.warmup} "
          f"warm-up, {args.state_store} "
          f"state store (tws: rocksdb), {args.pad} bytes of padding per key, load average "
          f"{os.getloadavg()[0]:.1f}" + (f", conf {' '.join(args.conf)}" if args.conf else ""),
          flush=True)
    results = {}
    try:
        for touched, total, rows in cases:
            results[touched, total, rows] = run_case(spark, root, workdir, touched, total, rows,
                                                     args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()
    report(results, args)
    print(f"total {time.perf_counter() - started:.0f} s, load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
