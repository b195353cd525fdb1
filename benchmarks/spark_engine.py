"""sparkwax on Spark vs a bare applyInPandasWithState (DESIGN.md section 6).

    python benchmarks/spark_engine.py [--rows N] [--keys 100 10000] [--repeat R] [--quick]

Setup: ``sparkwax.local_session("local[2]")`` (2 shuffle partitions, HDFS
state store). For each key count one parquet file of N rows
``(key long, v long)`` (key = row % keys, shuffled) is written once. Each
variant runs as one streaming query over a parquet directory with
``maxFilesPerTrigger=1`` and the ``noop`` sink; all variants' queries are
started, each with one copy of the file (micro-batch 0: query start-up, JIT and
worker warm-up, every key new), then R rounds drop one more copy into each
variant's directory in turn (rotating order), each processed as one
micro-batch of N rows by ``processAllAvailable()``. Those R batches per
variant are measured (every key has state from the earlier batches, so each
group pays a state read + write): ``durationMs.triggerExecution`` from
``lastProgress`` (the batch itself, no query start-up, no trigger wait), and
the CPU time of the JVM and its Python workers from the file drop to the end
of the batch (read from /proc: robust against other load on a shared
machine, unlike wall time). Best (and median) of R.

Variants (each emits one row per key per micro-batch: the running count):

* ``bare``        hand-written applyInPandasWithState: state = one binary
                  column holding pickle.dumps(int); ``len(pdf)`` per chunk;
                  one 1-row pandas frame out.
* ``sparkwax``    ``sw.stateful_batch(value="v")`` with a StatefulBatchLogic
                  that adds ``len(values)`` in ``on_batch`` and emits the
                  running count once (sparkwax.testing.reference.BatchCounter).
* ``sw-packed``   the same StatefulBatchLogic with ``host="packed"`` (keys
                  hashed into 4 x shuffle-partition buckets, one Spark group
                  per bucket; issue: the packed host).
* ``sw-per-item`` ``sw.stateful(value="v")`` with a StatefulLogic counting in
                  ``on_item`` (one Python call per row). A StatefulLogic cannot
                  tell which row is the last of an activation, so it emits
                  nothing (0 output rows). Informational: the cost of the
                  per-row loop on top of the per-group cost.
* ``groupBy.count`` streaming ``groupBy(key).count()`` in update mode (the
                  JVM's own stateful aggregation; reference, no Python).

Ratios are ``variant / bare`` on the best batch time. Goal: sparkwax <= 1.15.
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
from sparkwax.logic import RETAIN, StatefulLogic  # noqa: E402
from sparkwax.testing.reference import BatchCounter  # noqa: E402

_BASE_MTIME = 1_600_000_000


class ItemCounter(StatefulLogic):
    """Counts in on_item, emits nothing (the per-row loop alone)."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return (), RETAIN

    def snapshot(self):
        return self.n



def bare_count(key, pdfs, state):
    """The hand-written floor: pickled int state, len(pdf) per chunk."""
    import pandas as pd

    n = pickle.loads(state.get[0]) if state.exists else 0
    for pdf in pdfs:
        n += len(pdf)
    state.update((pickle.dumps(n),))
    yield pd.DataFrame({"key": [key[0]], "count": [n]})


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_table():
    """pid -> (ppid, cpu seconds incl. reaped children) for every process (Linux)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid = int(fields[1])
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        table[int(name)] = (ppid, (utime + stime + cutime + cstime) / _TICKS)
    return table


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and its descendants (the JVM, the
    pyspark daemon and its Python workers). Robust against other load on the
    machine, unlike wall time; None when /proc is not there."""
    if root is None or not os.path.isdir("/proc"):
        return float("nan")
    table = _proc_table()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            total += table[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def jvm_pid(spark):
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return getattr(proc, "pid", None)


def write_data(spark, path: str, rows: int, keys: int) -> str:
    from pyspark.sql import functions as F

    df = spark.range(rows).select((F.col("id") % keys).alias("key"), F.col("id").alias("v")) \
        .orderBy(F.rand(0))
    df.coalesce(1).write.mode("overwrite").parquet(path)
    (part,) = [f for f in os.listdir(path) if f.endswith(".parquet")]
    return os.path.join(path, part)


def build(spark, variant: str, source: str):
    from pyspark.sql import functions as F  # noqa: F401

    stream = spark.readStream.schema("key long, v long").option("maxFilesPerTrigger", 1) \
        .parquet(source)
    if variant == "bare":
        return stream.groupBy("key").applyInPandasWithState(
            bare_count, outputStructType="key long, count long", stateStructType="s binary",
            outputMode="append", timeoutConf="NoTimeout"), "append"
    if variant == "sparkwax":
        return sw.stateful_batch(stream, key="key", builder=BatchCounter, value="v",
                                 output_schema="count long"), "append"
    if variant == "sw-packed":
        return sw.stateful_batch(stream, key="key", builder=BatchCounter, value="v",
                                 output_schema="count long", host="packed"), "append"
    if variant == "sw-per-item":
        return sw.stateful(stream, key="key", builder=ItemCounter, value="v",
                           output_schema="count long"), "append"
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

    def __init__(self, spark, variant: str, parquet: str, workdir: str, trigger: str):
        self.variant, self.parquet = variant, parquet
        run_dir = tempfile.mkdtemp(prefix=f"{variant.replace('.', '_')}-", dir=workdir)
        self.source = os.path.join(run_dir, "input")
        os.makedirs(self.source)
        self.files = 0
        self.drop()
        out, mode = build(spark, variant, self.source)
        self.query = out.writeStream.format("noop").outputMode(mode) \
            .trigger(processingTime=trigger) \
            .option("checkpointLocation", os.path.join(run_dir, "checkpoint")).start()
        self.query.processAllAvailable()  # batch 0: start-up + warm-up, every key new
        self.warmup_ms = self.query.lastProgress["durationMs"]["triggerExecution"]
        self.trigger_ms, self.wall_ms, self.cpu_ms = [], [], []
        self.rows = self.state_rows = 0

    def drop(self) -> None:
        drop_file(self.parquet, self.source, self.files)
        self.files += 1

    def batch(self, root) -> None:
        """One more copy of the file: one measured micro-batch."""
        cpu = tree_cpu_seconds(root)
        start = time.perf_counter()
        self.drop()
        self.query.processAllAvailable()
        self.wall_ms.append((time.perf_counter() - start) * 1000)
        self.cpu_ms.append((tree_cpu_seconds(root) - cpu) * 1000)
        progress = self.query.lastProgress
        assert progress["numInputRows"] > 0, progress
        self.trigger_ms.append(progress["durationMs"]["triggerExecution"])
        self.rows = progress["numInputRows"]
        self.state_rows = sum(op.get("numRowsTotal", 0)
                              for op in progress.get("stateOperators", []))

    def stop(self) -> None:
        self.query.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="*", default=[100, 10_000])
    parser.add_argument("--repeat", type=int, default=3, help="measured batches per variant")
    parser.add_argument("--variants", nargs="*",
                        default=["bare", "sparkwax", "sw-packed", "sw-per-item",
                                 "groupBy.count"])
    parser.add_argument("--trigger", default="500 milliseconds",
                        help="processing-time trigger of every query (idle queries then "
                             "poll rarely; the wait is not part of the batch time)")
    parser.add_argument("--quick", action="store_true",
                        help="200k rows, 2 measured batches, bare + sparkwax only")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeat, args.variants = 200_000, 2, ["bare", "sparkwax"]

    started = time.perf_counter()
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    root = jvm_pid(spark)
    workdir = tempfile.mkdtemp(prefix="sparkwax-bench-")
    print(f"Spark {spark.version}, local[2], shuffle partitions "
          f"{spark.conf.get('spark.sql.shuffle.partitions')}, {args.rows:,} rows per "
          f"micro-batch, {args.repeat} measured batches after 1 warm-up batch")
    results = {}
    try:
        for keys in args.keys:
            parquet = write_data(spark, os.path.join(workdir, f"data-{keys}"), args.rows, keys)
            queries = []
            try:
                for variant in args.variants:
                    queries.append(Query(spark, variant, parquet, workdir, args.trigger))
                # Interleaved rounds (rotating order): load that drifts on a shared
                # machine, JIT warm-up and GC hit every variant alike.
                for round_ in range(args.repeat):
                    shift = round_ % len(queries)
                    for q in queries[shift:] + queries[:shift]:
                        q.batch(root)
            finally:
                for q in queries:
                    q.stop()
            for q in queries:
                r = {"warmup_ms": q.warmup_ms, "trigger_ms": q.trigger_ms, "wall_ms": q.wall_ms,
                     "cpu_ms": q.cpu_ms, "rows": q.rows, "state_rows": q.state_rows}
                results[keys, q.variant] = r
                print(f"  keys={keys:<6} {q.variant:<14} warm-up {r['warmup_ms']:>6} ms, "
                      f"batches {r['trigger_ms']} ms (wall "
                      f"{[round(w) for w in r['wall_ms']]}, cpu "
                      f"{[round(c) for c in r['cpu_ms']]}), state rows {r['state_rows']}",
                      flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        spark.stop()

    print()
    header = (f"{'keys':>7} {'variant':<14} {'batch ms':>9} {'med ms':>7} {'rows/s':>9} "
              f"{'ratio':>6} | {'cpu ms':>7} {'med cpu':>7} {'cpu us/grp':>10} {'cpu ratio':>9}")
    print(header)
    print("-" * len(header))
    for keys in args.keys:
        base = results.get((keys, "bare"))
        for variant in args.variants:
            r = results[keys, variant]
            best, cpu = min(r["trigger_ms"]), min(r["cpu_ms"])
            ratio = f"{best / min(base['trigger_ms']):.2f}" if base else "-"
            cpu_ratio = f"{cpu / min(base['cpu_ms']):.2f}" if base else "-"
            print(f"{keys:>7,} {variant:<14} {best:>9,} {statistics.median(r['trigger_ms']):>7,.0f}"
                  f" {args.rows / best * 1000:>9,.0f} {ratio:>6} | {cpu:>7,.0f}"
                  f" {statistics.median(r['cpu_ms']):>7,.0f} {cpu * 1000 / keys:>10,.0f}"
                  f" {cpu_ratio:>9}")
    print("batch ms = best durationMs.triggerExecution of the measured batches (wall); "
          "cpu ms = CPU time of the JVM + Python workers during the batch (best);\n"
          "ratio = variant / 'bare' (goal: sparkwax <= 1.15); cpu us/grp = cpu ms / keys")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
