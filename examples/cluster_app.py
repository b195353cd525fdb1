"""A streaming sparkwax app to deploy with spark-submit: JSON files in, Parquet out.

Per card, ``Burst`` groups payments separated by less than ``GAP`` of event
time and emits one summary row per burst when its event-time timer fires
(the watermark passes the last payment + GAP). The logic is defined here, in
the script's ``__main__``: Spark ships it to the executors by value
(cloudpickle); sparkwax itself reaches them as a zip (``sparkwax submit`` puts
it in ``--py-files``; otherwise the engine adds it when the step is planned).

The source reads one file per micro-batch, the checkpoint holds the state and
the file sink's log (exactly-once output), and ``availableNow`` stops the
query once the input present at start is consumed. Run it again with the same
arguments after a crash: it resumes from ``--checkpoint``.

    sparkwax submit examples/cluster_app.py --input in/ --output out/ --checkpoint ck/
    sparkwax submit examples/cluster_app.py --master spark://127.0.0.1:7077 \\
        --input /data/in --output /data/out --checkpoint /data/ck \\
        -- --conf spark.sql.shuffle.partitions=4
    python examples/cluster_app.py --input in/ --output out/ --checkpoint ck/   # local[*]
"""

import argparse
import sys
from datetime import timedelta

import sparkwax as sw

INPUT_SCHEMA = "card string, ts timestamp, amount long"
OUTPUT_SCHEMA = "start timestamp, `end` timestamp, payments long, total long"
GAP = timedelta(minutes=3)
TIME = sw.EventTime("ts", watermark="1 minute")


class Burst(sw.StatefulLogic):
    """Payments of one card less than GAP apart; a summary when a burst ends."""

    def __init__(self, resume=None):
        self.start, self.last, self.payments, self.total = resume or (None, None, 0, 0)

    def on_item(self, payment):
        self.start = self.start or payment["ts"]
        self.last = max(self.last or payment["ts"], payment["ts"])
        self.payments += 1
        self.total += payment["amount"]
        return [], sw.RETAIN

    def notify_at(self):
        return self.last + GAP

    def on_notify(self):
        return [(self.start, self.last, self.payments, self.total)], sw.DISCARD

    def on_eof(self):
        return self.on_notify()

    def snapshot(self):
        return (self.start, self.last, self.payments, self.total)  # plain data: plain pickle


def build(spark, source: str):
    payments = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1)
                .json(source))
    return sw.stateful(payments, key="card", builder=Burst, output_schema=OUTPUT_SCHEMA,
                       time=TIME, step_id="bursts")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder of JSON files")
    parser.add_argument("--output", required=True, help="Parquet output folder")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder")
    args = parser.parse_args(argv)
    spark = sw.local_session()  # spark-submit's --master and --conf win; else local[*]
    query = (build(spark, args.input).writeStream.format("parquet")
             .option("path", args.output).option("checkpointLocation", args.checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    print(f"done on {spark.sparkContext.master}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
