"""A checkpointed streaming job for the crash tests: JSON files in, Parquet out.

Reads ``--input`` (one file per micro-batch), runs the reference Accumulator
logic per key in EventTime mode, writes Parquet to ``--output`` through
Spark's file sink (exactly-once with the checkpoint) and stops when the input
is consumed (trigger availableNow), or, with ``--trigger "1 second"``, runs
until Ctrl-C/SIGTERM, which stop it between micro-batches. Kill it at any
point and start it again with the same arguments: it resumes from
``--checkpoint``. ``--progress`` prints a line per micro-batch.

    python examples/recovery_app.py --input in/ --output out/ --checkpoint ck/ \\
        [--state-store hdfs|rocksdb] [--host per_key|packed] [--conf KEY=VALUE ...]

Paths may be any URI Spark can write to (``hdfs://``, ``s3a://``,
``viewfs://``...); ``--conf`` passes the settings their file system needs.
"""

import argparse
import sys

import sparkwax as sw
from sparkwax.testing.reference import Accumulator

INPUT_SCHEMA = "key string, ts timestamp, value long"
OUTPUT_SCHEMA = "kind string, a long, b long"
TIME = sw.EventTime("ts", watermark="2 minutes")


def build(spark, source: str, host: str = "per_key"):
    stream = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(source)
    return sw.stateful(stream, key="key", builder=Accumulator, output_schema=OUTPUT_SCHEMA,
                       time=TIME, step_id="accumulate", host=host)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="crash-test streaming job")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--state-store", default="hdfs", choices=["hdfs", "rocksdb"])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--host", default="per_key", choices=["per_key", "packed"])
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--trigger", default="available-now",
                        help="available-now (default) or an interval, e.g. '1 second'")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    spark = sw.local_session(args.master, shuffle_partitions=2, state_store=args.state_store,
                             conf=conf)
    trigger = ({"availableNow": True} if args.trigger == "available-now"
               else {"processingTime": args.trigger})
    query = sw.start(build(spark, args.input, args.host), checkpoint=args.checkpoint,
                     path=args.output, trigger=trigger, progress=args.progress,
                     query_name="accumulate")
    query.awaitTermination()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
