"""What a rescale costs: ``sparkwax.engine.checkpoints.state.rescale`` of a stopped
query's checkpoint (2 -> 5 state partitions; packed: 8 -> 20 buckets) beside
the micro-batch that wrote that state (every key touched once), on one
local[2] session, wall and CPU (the whole process tree: JVM, Python workers).

    python benchmarks/rescale.py [--keys 10000 100000] [--hosts per_key packed] [--store hdfs]
    python benchmarks/rescale.py --keys 10000 --key-groups 8 128   # the design not taken

A rescale reads the whole state once and writes it once (one streaming query
of one batch), so its ratio to a batch touching every key is the figure that
carries to a cluster. ``--key-groups`` measures the design not taken
(Flink's: many fixed buckets, so parallelism can grow without moving keys):
the median packed batch with each bucket count. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from proc_cpu import tree_cpu  # noqa: E402

import sparkwax as sw  # noqa: E402
from sparkwax.engine.checkpoints.state.rescale import rescale  # noqa: E402


class Count(sw.StatefulLogic):
    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [], sw.RETAIN

    def snapshot(self):
        return self.n


def cpu_seconds() -> float:
    return sum(own + reaped for own, reaped in tree_cpu(os.getpid()).values())


def measure(spark, folder: str, keys: int, host: str):
    data, checkpoint = os.path.join(folder, "in"), os.path.join(folder, "ck")
    spark.range(keys).selectExpr("concat('k', id) AS k", "id AS x").write.parquet(data)
    stream = spark.readStream.schema("k string, x long").parquet(data)
    out = sw.stateful(stream, key="k", builder=Count, output_schema="n long", host=host)
    wall, cpu = time.perf_counter(), cpu_seconds()
    query = sw.start(out, checkpoint=checkpoint, format="noop", trigger={"availableNow": True})
    query.awaitTermination()
    batch = (time.perf_counter() - wall, cpu_seconds() - cpu)
    wall, cpu = time.perf_counter(), cpu_seconds()
    rescale(checkpoint, 5, spark=spark, idle_seconds=0)
    moved = (time.perf_counter() - wall, cpu_seconds() - cpu)
    return batch, moved


def key_groups(spark, folder: str, keys: int, buckets: int, batches: int):
    """Median wall and CPU of a packed batch touching ``keys`` keys with
    ``buckets`` buckets (the Flink-like alternative: many fixed key groups)."""
    data, checkpoint = os.path.join(folder, "in"), os.path.join(folder, "ck")
    for number in range(batches + 1):
        spark.range(keys).selectExpr("concat('k', id) AS k", "id AS x") \
            .write.parquet(os.path.join(data, str(number)))
    stream = spark.readStream.schema("k string, x long").option("maxFilesPerTrigger", 1) \
        .parquet(os.path.join(data, "*"))
    out = sw.stateful(stream, key="k", builder=Count, output_schema="n long", host="packed",
                      buckets=buckets)
    query = sw.start(out, checkpoint=checkpoint, format="noop",
                     trigger={"processingTime": "100 milliseconds"})
    walls, cpus, seen, cpu = [], [], 0, cpu_seconds()
    try:
        while len(walls) < batches + 1:
            progress = query.spark_query.recentProgress
            for entry in progress[seen:]:
                if entry["numInputRows"]:
                    now = cpu_seconds()
                    walls.append(entry["durationMs"]["triggerExecution"] / 1000)
                    cpus.append(now - cpu)
                    cpu = now
            seen = len(progress)
            time.sleep(0.05)
    finally:
        query.stop()
    walls, cpus = sorted(walls[1:]), sorted(cpus[1:])  # batch 0 starts the workers
    return walls[len(walls) // 2], cpus[len(cpus) // 2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--hosts", nargs="+", default=["per_key", "packed"])
    parser.add_argument("--store", default="hdfs", choices=["hdfs", "rocksdb"])
    parser.add_argument("--key-groups", type=int, nargs="*", default=None, metavar="BUCKETS",
                        help="instead: a packed batch of --keys keys with each bucket count")
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args(argv)
    spark = sw.local_session("local[2]", shuffle_partitions=2, state_store=args.store)
    if args.key_groups:
        print(f"{'keys':>8} {'buckets':>8} | {'batch wall':>10} {'cpu':>7}")
        for keys in args.keys:
            for buckets in args.key_groups:
                folder = tempfile.mkdtemp(prefix="sw-groups-")
                try:
                    wall, cpu = key_groups(spark, folder, keys, buckets, args.batches)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                print(f"{keys:>8} {buckets:>8} | {wall * 1000:>8.0f}ms {cpu * 1000:>5.0f}ms",
                      flush=True)
        return 0
    print(f"{'host':8} {'keys':>8} | {'batch wall':>10} {'cpu':>7} | {'rescale wall':>12} "
          f"{'cpu':>7} | {'wall ratio':>10} {'cpu ratio':>9}")
    for keys in args.keys:
        for host in args.hosts:
            folder = tempfile.mkdtemp(prefix="sw-rescale-")
            try:
                (bw, bc), (rw, rc) = measure(spark, folder, keys, host)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            print(f"{host:8} {keys:>8} | {bw:>9.1f}s {bc:>6.1f}s | {rw:>11.1f}s {rc:>6.1f}s | "
                  f"{rw / bw:>10.2f} {rc / bc:>9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
