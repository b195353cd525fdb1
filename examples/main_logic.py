"""A logic (and its snapshot type) defined in this script's __main__, run on Spark.

Spark ships the step to its Python workers with cloudpickle, by value for
classes defined in __main__; the snapshot codec falls back to cloudpickle for
the ``Tally`` snapshot below, which plain pickle cannot find on a worker.

    python examples/main_logic.py [--master local[2]]
"""

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass

import sparkwax as sw


@dataclass
class Tally:
    count: int = 0
    total: int = 0


class RunningTotal(sw.StatefulLogic):
    def __init__(self, resume=None):
        self.tally = resume or Tally()

    def on_item(self, value):
        self.tally = Tally(self.tally.count + 1, self.tally.total + value)
        return [(self.tally.count, self.tally.total)], sw.RETAIN

    def snapshot(self):
        return self.tally


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    spark = sw.local_session(args.master)
    folder = tempfile.mkdtemp(prefix="sparkwax-main-logic-")
    os.makedirs(f"{folder}/in")
    for batch, rows in enumerate([[("a", 1), ("b", 10), ("a", 2)], [("a", 3), ("b", 20)]]):
        path = f"{folder}/in/batch-{batch}.json"
        with open(path, "w") as handle:
            for seq, (key, value) in enumerate(rows):
                handle.write(json.dumps({"key": key, "seq": seq, "value": value}) + "\n")
        os.utime(path, (1_600_000_000 + batch,) * 2)
    stream = spark.readStream.schema("key string, seq long, value long") \
        .option("maxFilesPerTrigger", 1).json(f"{folder}/in")
    totals = sw.stateful(stream, key="key", builder=RunningTotal, value="value",
                         order_by="seq", output_schema="count long, total long")
    query = totals.writeStream.format("parquet").option("path", f"{folder}/out") \
        .option("checkpointLocation", f"{folder}/checkpoint").start()
    query.processAllAvailable()
    query.stop()
    rows = sorted(tuple(r) for r in spark.read.parquet(f"{folder}/out").collect())
    print(json.dumps(rows))
    expected = [("a", 1, 1), ("a", 2, 3), ("a", 3, 6), ("b", 1, 10), ("b", 2, 30)]
    if rows != expected:
        print(f"unexpected rows: {rows} != {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
