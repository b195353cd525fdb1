"""The per-batch plan work of a small micro-batch: sparkwax with and without
its observed metrics aggregate and its describe projection, against bare.

    python benchmarks/small_batch_plan.py [--repeat R] [variants ...]

Variants (default all): ``bare``, ``sparkwax`` (as shipped), ``sw-noobs``
(the step planned without the metrics ``observe``, the counts-only filter
kept), ``sw-nodesc`` (without the describe projection), ``sw-none``
(neither, nor the filter). The last three exist only here, to measure what
those plan nodes cost: they lose features. Case 10/10/20 of
spark_engine.py (10 keys, 20 rows per micro-batch), one session, interleaved
queries; prints best/median trigger time and CPU and the median of Spark's
``addBatch`` and ``queryPlanning``. Not collected by pytest.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# bare's function lives in spark_engine.py: the Python workers import it too
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH")) if p)

import spark_engine as se  # noqa: E402
import sparkwax as sw  # noqa: E402
import sparkwax.engine.plan as plan  # noqa: E402


def _no_observe(result, step_id):
    from pyspark.sql import functions as F

    counts = F.col(plan.METRICS_COLUMN)
    only = F.coalesce(counts[len(plan.FIELDS)], F.lit(0)) == F.lit(plan.ONLY_METRICS)
    return result.where(~only).drop(plan.METRICS_COLUMN)


PATCHES = {"bare": {}, "sparkwax": {}, "sw-noobs": {"_observed": _no_observe},
           "sw-nodesc": {"_describe": lambda frame, description: frame},
           "sw-none": {"_observed": lambda result, step_id: result.drop(plan.METRICS_COLUMN),
                       "_describe": lambda frame, description: frame}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", nargs="*", help=f"some of {list(PATCHES)} (default all)")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    args.variants = args.variants or list(PATCHES)
    unknown = [v for v in args.variants if v not in PATCHES]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {list(PATCHES)}")
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    root = se.jvm_pid(spark)
    work = tempfile.mkdtemp(prefix="sparkwax-small-")
    originals = {name: getattr(plan, name) for name in ("_observed", "_describe")}
    queries, durations = [], {}
    try:
        files = [se.write_keys(spark, os.path.join(work, f"d{r}"), 20, 10, 10, r)
                 for r in range(-1, args.repeat)]
        for variant in args.variants:
            for name, function in PATCHES[variant].items():
                setattr(plan, name, function)
            try:
                query = se.Query(spark, "bare" if variant == "bare" else "sparkwax", files[0],
                                 work, "500 milliseconds")
            finally:
                for name, function in originals.items():
                    setattr(plan, name, function)
            query.variant = variant
            queries.append(query)
            durations[variant] = []
        for round_, parquet in enumerate(files[1:]):
            shift = round_ % len(queries)
            for query in queries[shift:] + queries[:shift]:
                query.batch(parquet, root)
                durations[query.variant].append(query.query.lastProgress["durationMs"])
    finally:
        for query in queries:
            query.stop()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    for query in queries:
        medians = {k: statistics.median(d.get(k, 0) for d in durations[query.variant])
                   for k in ("addBatch", "queryPlanning")}
        print(f"{query.variant:<10} trigger best/median {min(query.trigger_ms)} / "
              f"{statistics.median(query.trigger_ms):.0f} ms, cpu best/median "
              f"{min(query.cpu_ms):.0f} / {statistics.median(query.cpu_ms):.0f} ms, "
              f"median addBatch {medians['addBatch']:.0f} ms, queryPlanning "
              f"{medians['queryPlanning']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
