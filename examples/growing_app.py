"""Growing: a stream started on a laptop, rescaled, restarted on a cluster.

Per user, a running total of purchase amounts, closed after 5 minutes (event
time) without a purchase. JSON files in (one per micro-batch), Parquet out,
trigger availableNow: each run takes the files present and stops.

    python examples/growing_app.py --input in/ --output out/ --checkpoint ck/ \\
        [--master local-cluster[2,1,1024]] [--partitions 5] [--host per_key|packed] \\
        [--logic Totals|TotalsV2]

Without ``--master`` and ``--partitions`` it runs on sparkwax's defaults
(``sw.local_session()``: local[*], state partitions = cores). docs/deploy.md,
"Growing", runs it, rescales its checkpoint with ``sparkwax state rescale``,
restarts it on a cluster and checks ``TotalsV2`` against the stored state
with ``sparkwax state check``; tests/spark/checkpoints/test_rescale.py runs those
commands.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

import sparkwax as sw

INPUT_SCHEMA = "user string, ts timestamp, amount long"
OUTPUT_SCHEMA = "kind string, total long, purchases long"
TIME = sw.EventTime("ts", watermark="1 minute")


class Totals(sw.StatefulLogic):
    """v1: the snapshot is ``(total, purchases, last purchase time)``."""

    IDLE = timedelta(minutes=5)

    def __init__(self, resume=None):
        self.total, self.purchases, self.last = resume or (0, 0, None)

    def on_item(self, event):
        self.total += event["amount"]
        self.purchases += 1
        self.last = event["ts"]
        return [{"kind": "running", "total": self.total, "purchases": self.purchases}], sw.RETAIN

    def notify_at(self):
        return self.last + self.IDLE

    def on_notify(self):
        return [{"kind": "closed", "total": self.total, "purchases": self.purchases}], sw.DISCARD

    def on_eof(self):  # sw.finish ends the stream: every open total closes
        return self.on_notify()

    def snapshot(self):
        return (self.total, self.purchases, self.last)


class TotalsV2(Totals):
    """v2: the snapshot becomes a dict; v1's tuples still restore."""

    def __init__(self, resume=None):
        if isinstance(resume, tuple):  # written by v1
            resume = {"total": resume[0], "purchases": resume[1], "last": resume[2]}
        resume = resume or {"total": 0, "purchases": 0, "last": None}
        super().__init__((resume["total"], resume["purchases"], resume["last"]))

    def snapshot(self):
        return {"total": self.total, "purchases": self.purchases, "last": self.last}


LOGICS = {"Totals": Totals, "TotalsV2": TotalsV2}


def build(spark, source: str, host: str = "per_key", logic=Totals):
    stream = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(source)
    return sw.stateful(stream, key="user", builder=logic, output_schema=OUTPUT_SCHEMA,
                       time=TIME, step_id="totals", host=host)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="a stream that grows")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--master", default=None, help="default: local[*]")
    parser.add_argument("--partitions", type=int, default=None,
                        help="state partitions (default: the cores; after a rescale, its count)")
    parser.add_argument("--host", default="per_key", choices=["per_key", "packed"])
    parser.add_argument("--logic", default="Totals", choices=sorted(LOGICS))
    args = parser.parse_args(argv)
    spark = sw.local_session(args.master, shuffle_partitions=args.partitions)
    query = sw.start(build(spark, args.input, args.host, LOGICS[args.logic]),
                     checkpoint=args.checkpoint, path=args.output,
                     trigger={"availableNow": True})
    query.awaitTermination()
    progress = query.spark_query.lastProgress or {}
    operators = progress.get("stateOperators") or [{}]
    print(f"done: {operators[0].get('numShufflePartitions')} state partitions, "
          f"{operators[0].get('numRowsTotal')} state rows", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
