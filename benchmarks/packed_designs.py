"""State designs for the packed host: AIPWS per key vs AIPWS bucketed vs TWS bucketed.

    python benchmarks/packed_designs.py [--quick] [--rows N] [--batches B]
        [--variants ...] [--cases dense sparse] [--dense T/N] [--sparse T/N]
        [--pad BYTES] [--timers] [--changelog true|false] [--dump-metrics]

Needs the ``protobuf`` package besides pyspark/pandas/pyarrow:
transformWithStateInPandas talks to the JVM state server in protobuf, and
pyspark's ``sql`` extra does not pull it in (without it the query dies with
"TransformWithStateInPySpark driver worker exited unexpectedly (crashed)").

A research benchmark (docs/performance.md, "State layout of the packed host";
sparkwax/engine/hosts/packed.py); it does
not use sparkwax itself. One run, one SparkSession: ``local[2]``, 2 shuffle
partitions, RocksDB state store provider for every variant.

Workload: counting. Input rows ``(key string, v long)``; every variant keeps a
running count per user key (state = ``pickle.dumps(int)``) and emits
``(key, count)`` once per key that had rows in the micro-batch.

Variants:

* ``a-aipws-key``  applyInPandasWithState grouped by ``key``; state row =
                   ``(s binary)`` = pickled int. The baseline (ratio 1.00).
* ``b-aipws-bkt``  applyInPandasWithState grouped by
                   ``pmod(xxhash64(key), 8)``; state row = ``(keys binary)`` =
                   pickle of ``{key: pickled int}``. Touched keys are re-pickled,
                   untouched keys' bytes are reused, but the whole dict is
                   unpickled, re-pickled and written on every call (the
                   first packed host).
* ``e-aipws-cols`` the same grouping with sparkwax's columnar ``Bucket``
                   (sparkwax/engine/hosts/bucket.py: keys list, blobs back to back in
                   one buffer, timer arrays): untouched keys are copied as
                   bytes, never unpickled (today's packed host).
* ``c-tws-bkt``    transformWithStateInPandas grouped by the same bucket; a
                   ``MapState("keys", "k string", "blob binary")``; only the
                   touched keys are read (``getValue``) and written
                   (``updateValue``), one JVM round trip each.
* ``d-tws-key``    (extra, only with --variants) transformWithStateInPandas grouped by
                   ``key`` with a ``ValueState`` (TWS per key).

With ``--pad BYTES`` every snapshot carries BYTES random bytes besides the
count (bigger per-key state: (b) then re-pickles and rewrites N x BYTES per
batch). With ``--timers`` every touched key also re-arms a processing-time inactivity
timeout (now + 1 h, never fires during the run): (a) ``setTimeoutDuration``,
(b) the bucket's timeout = earliest armed timeout of its keys, (c) the key's
due time is kept next to its blob in the MapState plus one ``registerTimer``
per (bucket, distinct due time) and a due-time index ``MapState(due -> keys)``.

Cases (keys touched per batch / keys total):

* ``dense``   10k / 10k: every batch touches every key.
* ``sparse``  1k / 100k: batch 0 creates the 100k keys, later batches touch a
              fresh random 1k of them.

Each case starts one streaming query per variant on its own parquet folder
(``maxFilesPerTrigger=1``, ``noop`` sink, update mode); batch 0 (query start,
worker warm-up, key creation) is not measured; then B batches of N rows are
dropped round-robin (a, b, c, then c, b, a, ...) so that changes in machine
load hit all variants alike. Reported per variant: median and best
``durationMs.triggerExecution`` and ``addBatch`` of the measured batches, the
CPU time of the JVM + Python workers during each batch, the ratio vs (a), and
the state store metrics of ``stateOperators`` (rows updated, memory, RocksDB
custom metrics such as put count, bytes copied, flushed bytes), plus the
state bytes the Python side handed to the store (an accumulator: pickled
blobs + keys). Only ratios within one run mean anything on a shared machine.
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from proc_cpu import tree_cpu  # benchmarks/, the script's folder

BUCKETS = 8
TIMEOUT_MS = 3_600_000
_BASE_MTIME = 1_600_000_000

ALL_VARIANTS = ["a-aipws-key", "b-aipws-bkt", "e-aipws-cols", "c-tws-bkt", "d-tws-key"]
DEFAULT_VARIANTS = ["a-aipws-key", "b-aipws-bkt", "e-aipws-cols", "c-tws-bkt"]

# RocksDB metrics worth a column in the write-amplification table (when present).
WA_METRICS = ["rocksdbPutCount", "rocksdbBytesCopied", "rocksdbTotalBytesWrittenByFlush",
              "rocksdbTotalBytesWrittenByCompaction", "rocksdbSstFileSize",
              "rocksdbWriteBatchBytes"]


# --------------------------------------------------------------------------- variants
# Everything below is shipped to the Python workers by cloudpickle (this file
# runs as __main__, so by value). ``o`` is an Opts: three accumulators (state
# bytes handed to the store, microseconds inside the UDF, microseconds of those
# spent consuming the input frames), the timers flag and the snapshot padding.

class Opts:
    def __init__(self, spark, timers: bool, pad: int):
        sc = spark.sparkContext
        self.bytes, self.udf_us, self.input_us = (sc.accumulator(0), sc.accumulator(0),
                                                  sc.accumulator(0))
        self.timers, self.pad = timers, pad


def enc(n: int, pad: int) -> bytes:
    """A key's snapshot: pickled count (plus ``pad`` incompressible bytes)."""
    return pickle.dumps(n) if not pad else pickle.dumps((n, os.urandom(pad)))


def dec(blob, pad: int) -> int:
    value = pickle.loads(blob)
    return value if not pad else value[0]


def _counts(pdfs):
    """(keys list, counts list) of the user keys in a group's frames."""
    frames = [pdf["key"] for pdf in pdfs]
    if not frames:
        return [], []
    keys = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    counts = keys.value_counts(sort=False)
    return counts.index.tolist(), counts.tolist()


def make_aipws_key(o: Opts):
    acc, tacc, iacc, timers, pad = o.bytes, o.udf_us, o.input_us, o.timers, o.pad

    def count_key(key, pdfs, state):
        t0 = time.perf_counter()
        rows = 0
        for pdf in pdfs:
            rows += len(pdf)
        t1 = time.perf_counter()
        n = (dec(state.get[0], pad) if state.exists else 0) + rows
        blob = enc(n, pad)
        state.update((blob,))
        acc.add(len(blob) + len(key[0]))
        if timers:
            state.setTimeoutDuration(TIMEOUT_MS)
        out = pd.DataFrame({"key": [key[0]], "count": [n]})
        iacc.add(int((t1 - t0) * 1e6))
        tacc.add(int((time.perf_counter() - t0) * 1e6))
        yield out
    return count_key


class DictBucket:
    """Variant (b)'s bucket state: one pickled dict ``{key: blob}`` (or
    ``{key: (blob, due)}`` with --timers), with the methods of sparkwax's
    columnar ``Bucket`` (variant (e)) so both run the same function."""

    def __init__(self, keys: dict):
        self.keys = keys

    @classmethod
    def empty(cls):
        return cls({})

    @classmethod
    def decode(cls, blob: bytes):
        return cls(pickle.loads(blob))

    def get(self, key):
        entry = self.keys.get(key)
        return entry[0] if type(entry) is tuple else entry

    def put(self, key, blob, timer, armed):
        self.keys[key] = blob if armed is None else (blob, armed)

    def encode(self):
        armed = [entry[1] for entry in self.keys.values() if type(entry) is tuple]
        return pickle.dumps(self.keys, protocol=5), (min(armed) if armed else None)


def make_aipws_bucketed(o: Opts, columnar: bool):
    """Variants (b) and (e): one state row per bucket, (e) in sparkwax's
    columnar ``Bucket``, (b) in a ``DictBucket``."""
    if columnar:
        from sparkwax.engine.hosts.bucket import Bucket as store
    else:
        store = DictBucket
    acc, tacc, iacc, timers, pad = o.bytes, o.udf_us, o.input_us, o.timers, o.pad

    def count_bucket(bucket_key, pdfs, state):
        t0 = time.perf_counter()
        if state.hasTimedOut:  # (never happens here: 1 h timeouts)
            for _ in pdfs:
                pass
            return
        names, counts = _counts(pdfs)
        t1 = time.perf_counter()
        bucket = store.decode(state.get[0]) if state.exists else store.empty()
        now = state.getCurrentProcessingTimeMs() if timers else 0
        due = now + TIMEOUT_MS if timers else None
        out = []
        for name, c in zip(names, counts):
            stored = bucket.get(name)
            n = (dec(stored, pad) if stored is not None else 0) + c
            bucket.put(name, enc(n, pad), due, due)
            out.append(n)
        blob, earliest = bucket.encode()
        state.update((blob,))
        acc.add(len(blob))
        if timers:
            state.setTimeoutDuration(max(earliest - now, 1))
        frame = pd.DataFrame({"key": names, "count": out}) if names else None
        iacc.add(int((t1 - t0) * 1e6))
        tacc.add(int((time.perf_counter() - t0) * 1e6))
        if frame is not None:
            yield frame
    return count_bucket


def make_tws_bucket(o: Opts):
    from pyspark.sql.streaming import StatefulProcessor

    acc, tacc, iacc, timers, pad = o.bytes, o.udf_us, o.input_us, o.timers, o.pad

    class PackedCounter(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            if timers:
                self.keys = handle.getMapState("keys", "k string", "blob binary, due long")
                self.due = handle.getMapState("due", "due long", "keys binary")
            else:
                self.keys = handle.getMapState("keys", "k string", "blob binary")

        def handleInputRows(self, key, rows, timerValues):
            t0 = time.perf_counter()
            names, counts = _counts(rows)  # drives TWS's row-by-row input conversion
            t1 = time.perf_counter()
            now = timerValues.getCurrentProcessingTimeInMs() if timers else 0
            written, out = 0, []
            for name, c in zip(names, counts):
                row = self.keys.getValue((name,))  # one JVM round trip
                n = (dec(row[0], pad) if row is not None else 0) + c
                blob = enc(n, pad)
                if timers:
                    self.keys.updateValue((name,), (blob, now + TIMEOUT_MS))  # one more
                    written += len(blob) + 8
                else:
                    self.keys.updateValue((name,), (blob,))
                    written += len(blob)
                written += len(name)
                out.append(n)
            if timers and names:
                # Every key touched in this call gets the same due time: one timer
                # for the bucket + one due-index entry (due -> keys). Stale entries
                # (keys re-armed since) are skipped when the timer fires.
                due = now + TIMEOUT_MS
                index = pickle.dumps(names)
                self.due.updateValue((due,), (index,))
                self.handle.registerTimer(due)
                written += len(index) + 8 + 16
            acc.add(written)
            frame = pd.DataFrame({"key": names, "count": out}) if names else None
            iacc.add(int((t1 - t0) * 1e6))
            tacc.add(int((time.perf_counter() - t0) * 1e6))
            if frame is not None:
                yield frame

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            # (never happens here: 1 h timeouts; the logic is checked by hand)
            due = expiredTimerInfo.getExpiryTimeInMs()
            row = self.due.getValue((due,))
            if row is not None:
                for name in pickle.loads(row[0]):
                    entry = self.keys.getValue((name,))
                    if entry is not None and entry[1] == due:
                        self.keys.removeKey((name,))
                self.due.removeKey((due,))
            return iter([])

        def close(self):
            pass

    return PackedCounter()


def make_tws_key(o: Opts):
    from pyspark.sql.streaming import StatefulProcessor

    acc, tacc, iacc, timers, pad = o.bytes, o.udf_us, o.input_us, o.timers, o.pad

    class KeyCounter(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.state = handle.getValueState("n", "blob binary")

        def handleInputRows(self, key, rows, timerValues):
            t0 = time.perf_counter()
            n = 0
            for pdf in rows:
                n += len(pdf)
            t1 = time.perf_counter()
            row = self.state.get()
            n += dec(row[0], pad) if row is not None else 0
            blob = enc(n, pad)
            self.state.update((blob,))
            acc.add(len(blob) + len(key[0]))
            if timers:  # the old timer has to go, or every key piles up timers
                for old in self.handle.listTimers():
                    self.handle.deleteTimer(old)
                self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + TIMEOUT_MS)
            out = pd.DataFrame({"key": [key[0]], "count": [n]})
            iacc.add(int((t1 - t0) * 1e6))
            tacc.add(int((time.perf_counter() - t0) * 1e6))
            yield out

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.state.clear()
            return iter([])

        def close(self):
            pass

    return KeyCounter()


def build(spark, variant: str, source: str, o: Opts):
    from pyspark.sql import functions as F

    stream = spark.readStream.schema("key string, v long").option("maxFilesPerTrigger", 1) \
        .parquet(source)
    out_schema = "key string, count long"
    aipws_timeout = "ProcessingTimeTimeout" if o.timers else "NoTimeout"
    tws_time = "ProcessingTime" if o.timers else "None"
    bucketed = stream.withColumn("bucket", F.expr(f"pmod(xxhash64(key), {BUCKETS})"))
    if variant == "a-aipws-key":
        return stream.groupBy("key").applyInPandasWithState(
            make_aipws_key(o), outputStructType=out_schema,
            stateStructType="s binary", outputMode="update", timeoutConf=aipws_timeout)
    if variant == "b-aipws-bkt":
        return bucketed.groupBy("bucket").applyInPandasWithState(
            make_aipws_bucketed(o, columnar=False), outputStructType=out_schema,
            stateStructType="keys binary", outputMode="update", timeoutConf=aipws_timeout)
    if variant == "e-aipws-cols":
        return bucketed.groupBy("bucket").applyInPandasWithState(
            make_aipws_bucketed(o, columnar=True), outputStructType=out_schema,
            stateStructType="keys binary", outputMode="update", timeoutConf=aipws_timeout)
    if variant == "c-tws-bkt":
        return bucketed.groupBy("bucket").transformWithStateInPandas(
            make_tws_bucket(o), outputStructType=out_schema,
            outputMode="Update", timeMode=tws_time)
    if variant == "d-tws-key":
        return stream.groupBy("key").transformWithStateInPandas(
            make_tws_key(o), outputStructType=out_schema,
            outputMode="Update", timeMode=tws_time)
    raise ValueError(variant)


# --------------------------------------------------------------------------- data

def write_batches(folder: str, touched: int, total: int, rows: int, batches: int,
                  seed: int = 0):
    """Parquet files batch-0000 .. batch-B: batch 0 has every one of ``total``
    keys, later batches ``rows`` rows over ``touched`` keys (all of them when
    touched == total, else a fresh random subset per batch); returns the paths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = np.array([f"user-{i:06d}" for i in range(total)], dtype=object)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for number in range(batches + 1):
        if number == 0 or touched >= total:
            pool = names  # batch 0 creates every key
        else:
            pool = names[rng.choice(total, touched, replace=False)]
        n = max(rows, len(pool))
        keys = np.concatenate([pool, pool[rng.integers(0, len(pool), n - len(pool))]])
        rng.shuffle(keys)
        table = pa.table({"key": pa.array(keys.tolist(), pa.string()),
                          "v": pa.array(np.arange(n, dtype=np.int64))})
        path = os.path.join(folder, f"batch-{number:04d}.parquet")
        pq.write_table(table, path)
        paths.append(path)
    return paths


def drop_file(parquet: str, source: str, number: int) -> None:
    staging = os.path.join(os.path.dirname(source), f"staging-{os.path.basename(source)}.tmp")
    shutil.copyfile(parquet, staging)
    os.utime(staging, (_BASE_MTIME + number,) * 2)
    os.replace(staging, os.path.join(source, f"part-{number:04d}.parquet"))


# --------------------------------------------------------------------------- measuring

def cpu_table(root) -> dict:
    """pid -> own CPU seconds (utime + stime) of ``root`` (the JVM) and its
    descendants (pyspark daemon, Python workers)."""
    return {pid: own for pid, (own, _reaped) in tree_cpu(root).items()}


def cpu_delta_ms(before: dict, after: dict) -> float:
    """CPU ms spent between two cpu_table snapshots by the processes alive at the
    end (a worker that exited in between loses its last slice: a small undercount)."""
    if not after:
        return float("nan")
    return 1000 * sum(max(cpu - before.get(pid, 0.0), 0.0) for pid, cpu in after.items())


def state_metrics(progress) -> dict:
    """Sum of the numeric state operator metrics (incl. customMetrics) of one progress."""
    out: dict = {}
    for op in progress.get("stateOperators", []):
        for name, value in op.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[name] = out.get(name, 0) + value
        for name, value in (op.get("customMetrics") or {}).items():
            if isinstance(value, (int, float)):
                out[name] = out.get(name, 0) + value
    return out


class Run:
    """One streaming query of one variant of one case."""

    def __init__(self, spark, variant, workdir, timers, pad):
        self.variant = variant
        self.dir = tempfile.mkdtemp(prefix=f"{variant}-", dir=workdir)
        self.source = os.path.join(self.dir, "input")
        os.makedirs(self.source)
        self.o = Opts(spark, timers, pad)
        out = build(spark, variant, self.source, self.o)
        self.query = out.writeStream.format("noop").outputMode("update") \
            .queryName(f"q_{variant.replace('-', '_')}_{os.path.basename(self.dir)[-6:]}") \
            .option("checkpointLocation", os.path.join(self.dir, "checkpoint")).start()
        self.batches = []  # dicts per measured batch
        self.first = None

    def step(self, parquet, number, root):
        drop_file(parquet, self.source, number)
        o = self.o
        acc0, tacc0, iacc0 = o.bytes.value, o.udf_us.value, o.input_us.value
        cpu0 = cpu_table(root)
        start = time.perf_counter()
        self.query.processAllAvailable()
        wall = (time.perf_counter() - start) * 1000
        cpu = cpu_delta_ms(cpu0, cpu_table(root))
        progress = self.query.lastProgress
        assert progress and progress["numInputRows"] > 0, (self.variant, progress)
        record = {"trigger": progress["durationMs"].get("triggerExecution"),
                  "addBatch": progress["durationMs"].get("addBatch"),
                  "wall": wall, "cpu": cpu, "py_bytes": o.bytes.value - acc0,
                  "py_ms": (o.udf_us.value - tacc0) / 1000,
                  "input_ms": (o.input_us.value - iacc0) / 1000,
                  "rows": progress["numInputRows"], "state": state_metrics(progress),
                  "raw_ops": progress.get("stateOperators", [])}
        if number == 0:
            self.first = record
        else:
            self.batches.append(record)
        return record

    def stop(self):
        try:
            self.query.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def run_case(spark, case, args, workdir, root):
    touched, total = args.sizes[case]
    paths = write_batches(os.path.join(workdir, f"data-{case}"), touched, total,
                          args.rows, args.batches)
    runs = {}
    try:
        for variant in args.variants:
            runs[variant] = Run(spark, variant, workdir, args.timers, args.pad)
        for variant, run in runs.items():
            r = run.step(paths[0], 0, root)
            print(f"  [{case}] {variant:<12} batch 0 (creates {total:,} keys): "
                  f"{r['trigger']:,} ms, cpu {r['cpu']:,.0f} ms", flush=True)
        for number in range(1, args.batches + 1):
            order = list(runs) if number % 2 else list(reversed(list(runs)))
            for variant in order:
                r = runs[variant].step(paths[number], number, root)
                print(f"  [{case}] {variant:<12} batch {number}: {r['trigger']:,} ms "
                      f"(addBatch {r['addBatch']:,}, cpu {r['cpu']:,.0f}, in UDF "
                      f"{r['py_ms']:,.0f} of which input {r['input_ms']:,.0f}), "
                      f"py state bytes {r['py_bytes']:,}", flush=True)
        last_ops = {v: run.batches[-1]["raw_ops"] for v, run in runs.items()}
        return {v: {"first": run.first, "batches": run.batches} for v, run in runs.items()}, \
            touched, total, last_ops
    finally:
        for run in runs.values():
            run.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per micro-batch")
    parser.add_argument("--batches", type=int, default=5, help="measured batches per variant")
    parser.add_argument("--variants", nargs="*", default=DEFAULT_VARIANTS,
                        choices=ALL_VARIANTS)
    parser.add_argument("--cases", nargs="*", default=["dense", "sparse"],
                        choices=["dense", "sparse"])
    parser.add_argument("--dense", default="10000/10000", metavar="TOUCHED/TOTAL",
                        help="keys touched per batch / keys total of the dense case")
    parser.add_argument("--sparse", default="1000/100000", metavar="TOUCHED/TOTAL",
                        help="keys touched per batch / keys total of the sparse case")
    parser.add_argument("--pad", type=int, default=0, metavar="BYTES",
                        help="add BYTES random bytes to every key's snapshot (default 0: "
                             "the snapshot is pickle.dumps(count), 5 bytes)")
    parser.add_argument("--timers", action="store_true",
                        help="every touched key re-arms a 1 h processing-time timeout")
    parser.add_argument("--changelog", choices=["default", "true", "false"], default="default",
                        help="spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing"
                             ".enabled")
    parser.add_argument("--quick", action="store_true",
                        help="100k rows per batch, 3 measured batches")
    parser.add_argument("--dump-metrics", action="store_true",
                        help="print the raw stateOperators of the last batch of each variant")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.batches = 100_000, 3
    args.sizes = {name: tuple(int(x) for x in getattr(args, name).split("/"))
                  for name in ("dense", "sparse")}

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("packed-designs")
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR",
        # Idle queries (the other variants) list their folder every pollingDelay:
        # slow that down so they steal little from the measured one.
        "spark.sql.streaming.pollingDelay": "200ms",
        # No empty batches between files (processing-time timeouts would run one
        # per trigger on every idle query); the 1 h timeouts never fire anyway.
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        # A busy machine can take > 15 s (the default) to start the Python
        # process TWS runs on the driver for init() ("failed to connect back").
        "spark.python.authenticate.socketTimeout": "180s",
    }
    if args.changelog != "default":
        conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] = \
            args.changelog
    for name, value in conf.items():
        builder = builder.config(name, value)
    started = time.perf_counter()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    root = getattr(proc, "pid", None)
    try:
        changelog = spark.conf.get(
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled")
    except Exception:  # noqa: BLE001 - not set and no default exposed
        changelog = "not set = Spark default"

    print(f"Spark {spark.version}, local[2], shuffle partitions 2, RocksDB state store "
          f"(changelog checkpointing {changelog}), {args.rows:,} rows per micro-batch, "
          f"{args.batches} measured batches after batch 0, buckets {BUCKETS}, "
          f"timers {'on' if args.timers else 'off'}, snapshot padding {args.pad} B",
          flush=True)
    workdir = tempfile.mkdtemp(prefix="packed-designs-")
    results = {}
    try:
        for case in args.cases:
            res, touched, total, last_ops = run_case(spark, case, args, workdir, root)
            results[case] = (res, touched, total)
            if args.dump_metrics:
                for variant, ops in last_ops.items():
                    print(f"  [{case}] {variant} stateOperators of the last batch:")
                    print("    " + json.dumps(ops, indent=None, sort_keys=True))
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    report(results, args)
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


def report(results, args):
    print()
    print("Micro-batch time of the measured batches (medians, ms). ratio = variant / "
          "a-aipws-key (same run, same case); in UDF = wall time inside the Python\n"
          "functions (summed over both tasks), input = the part spent pulling the input "
          "frames (AIPWS: includes waiting on the JVM, which ships each\ngroup's state inside "
          "the Arrow stream of its rows and stores the returned state; TWS: its row-by-row "
          "input conversion), us/key = (in UDF - input) per "
          "touched key")
    header = (f"{'case':<7} {'touched/total':>15} {'variant':<12} {'trigger':>8} {'best':>7} "
              f"{'addBatch':>8} {'cpu':>7} {'in UDF':>7} {'input':>6} {'us/key':>7} "
              f"{'ratio':>6} {'cpu ratio':>9} {'batch 0':>8}")
    print(header)
    print("-" * len(header))
    for case, (res, touched, total) in results.items():
        base = res.get("a-aipws-key")
        base_t = med([b["trigger"] for b in base["batches"]]) if base else None
        base_c = med([b["cpu"] for b in base["batches"]]) if base else None
        for variant in args.variants:
            bs = res[variant]["batches"]
            t, c = med([b["trigger"] for b in bs]), med([b["cpu"] for b in bs])
            py, inp = med([b["py_ms"] for b in bs]), med([b["input_ms"] for b in bs])
            print(f"{case:<7} {f'{touched:,}/{total:,}':>15} {variant:<12} {t:>8,.0f} "
                  f"{min(b['trigger'] for b in bs):>7,} {med([b['addBatch'] for b in bs]):>8,.0f}"
                  f" {c:>7,.0f} {py:>7,.0f} {inp:>6,.0f}"
                  f" {med([(b['py_ms'] - b['input_ms']) for b in bs]) * 1000 / touched:>7,.0f}"
                  f" {(t / base_t if base_t else float('nan')):>6.2f}"
                  f" {(c / base_c if base_c else float('nan')):>9.2f}"
                  f" {res[variant]['first']['trigger']:>8,}")
    print("(trigger = durationMs.triggerExecution, best = its minimum, cpu = CPU ms of the JVM "
          "+ Python workers during the batch, batch 0 = the unmeasured first batch)")

    print()
    print("State writes per measured batch (medians). py bytes = state bytes the Python side "
          "handed to the store (blobs + user keys);\nB/touched = py bytes per touched key; "
          "copied = rocksdbBytesCopied (new checkpoint files); flushed = "
          "rocksdbTotalBytesWrittenByFlush; written = rocksdbTotalBytesWritten")
    names = set()
    for res, _, _ in results.values():
        for variant in args.variants:
            for b in res[variant]["batches"]:
                names.update(b["state"])
    short = {"numRowsUpdated": "rowsUpd", "numRowsTotal": "rowsTotal",
             "memoryUsedBytes": "memory", "rocksdbPutCount": "puts",
             "rocksdbBytesCopied": "copied", "rocksdbTotalBytesWrittenByFlush": "flushed",
             "rocksdbTotalBytesWrittenByCompaction": "compacted",
             "rocksdbTotalBytesWritten": "written", "rocksdbSstFileSize": "sstSize",
             "rocksdbFilesCopied": "filesCp"}
    cols = [m for m in short if m in names]
    header = f"{'case':<7} {'variant':<12} {'py bytes':>10} {'B/touched':>9} " + \
        " ".join(f"{short[c]:>10}" for c in cols)
    print(header)
    print("-" * len(header))
    for case, (res, touched, total) in results.items():
        for variant in args.variants:
            bs = res[variant]["batches"]
            pyb = med([b["py_bytes"] for b in bs])
            row = f"{case:<7} {variant:<12} {pyb:>10,.0f} {pyb / touched:>9,.1f} "
            row += " ".join(f"{med([b['state'].get(c) for b in bs]):>10,.0f}" for c in cols)
            print(row)
    others = sorted(n for n in names if n not in cols)
    print()
    print("Other state operator metrics (median per measured batch, non-zero only):")
    for case, (res, touched, total) in results.items():
        for variant in args.variants:
            bs = res[variant]["batches"]
            values = {n: med([b["state"].get(n) for b in bs]) for n in others}
            shown = ", ".join(f"{n}={v:,.0f}" for n, v in values.items() if v == v and v != 0)
            print(f"  {case:<7} {variant:<12} {shown}")


if __name__ == "__main__":
    sys.exit(main())
