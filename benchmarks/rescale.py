"""What a rescale costs: ``sparkwax.engine.state.rescale`` of a stopped
query's checkpoint (2 -> 5 state partitions; packed: 8 -> 20 buckets) beside
the micro-batch that wrote that state (every key touched once), on one
local[2] session, wall and CPU (the whole process tree: JVM, Python workers).

    python benchmarks/rescale.py [--keys 10000 100000] [--hosts per_key packed] [--store hdfs]

A rescale reads the whole state once and writes it once (one streaming query
of one batch), so its ratio to a batch touching every key is the figure that
carries to a cluster. Not collected by pytest.
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
from sparkwax.engine.state.rescale import rescale  # noqa: E402


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--hosts", nargs="+", default=["per_key", "packed"])
    parser.add_argument("--store", default="hdfs", choices=["hdfs", "rocksdb"])
    args = parser.parse_args(argv)
    spark = sw.local_session("local[2]", shuffle_partitions=2, state_store=args.store)
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
