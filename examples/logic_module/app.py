"""Run a logic imported from a module next to this script (``streaks.py``).

The driver imports ``streaks`` from the script's folder; executors import it
from the zip of app modules that ``sparkwax submit`` (or, for ``python
app.py`` and a plain ``spark-submit``, the engine) ships, or from
``--py-files`` if you pass it yourself:

    sparkwax submit examples/logic_module/app.py --master spark://HOST:7077 \\
        --input in/ --output out/ --checkpoint ck/

Unshipped (``--no-ship-app``), the job fails on the executors with
``ModuleNotFoundError: No module named 'streaks'``. ``--where`` prints where
the executors loaded sparkwax and streaks from.
"""

import argparse
import json
import sys

import sparkwax as sw
from streaks import Streak


def executor_origins(spark) -> dict:
    """Where the executors' Python workers import sparkwax and streaks from."""
    def where(_):
        import sparkwax
        import streaks
        yield {"sparkwax": sparkwax.__file__, "streaks": streaks.__file__}
    return spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder of JSON files")
    parser.add_argument("--output", required=True, help="Parquet output folder")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder")
    parser.add_argument("--where", action="store_true",
                        help="print the executors' module origins as JSON")
    args = parser.parse_args(argv)
    spark = sw.local_session()
    readings = (spark.readStream.schema("sensor string, seq long, value double")
                .option("maxFilesPerTrigger", 1).json(args.input))
    streaks = sw.stateful(readings, key="sensor", builder=Streak, value="value",
                          order_by="seq", output_schema="length long, best long")
    query = (streaks.writeStream.format("parquet").option("path", args.output)
             .option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    if args.where:
        print("origins " + json.dumps(executor_origins(spark)), flush=True)
    rows = sorted(tuple(row) for row in spark.read.parquet(args.output).collect())
    print("rows " + json.dumps(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
