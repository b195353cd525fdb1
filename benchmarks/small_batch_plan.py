"""The per-batch plan work of a small micro-batch: sparkwax with and without
its observed metrics aggregate, and with the step description carried in
other ways, against bare.

    python benchmarks/small_batch_plan.py [--repeat R] [variants ...]

Variants (default all): ``bare``; ``sparkwax`` (as shipped: the description
in the metadata of ``applyInPandasWithState``'s output type, no plan node of
its own); ``sw-project`` (the description by a projection re-aliasing every
output column, as before 2026-11-24's change), ``sw-project1`` (that
projection with the description on the first column only), ``sw-merged1``
(the drop of the metrics column and the description on the first column in
one projection); ``sw-noobs`` (without the metrics ``observe``, the
counts-only filter kept), ``sw-onesum`` (an ``observe`` of one sum instead
of one per count), ``sw-none`` (no observe, no filter, no description). All
but the first two exist only here, to measure what those plan nodes cost;
the last three lose features. Case 10/10/20 of spark_engine.py (10 keys, 20
rows per micro-batch), one session, interleaved queries; prints best/median
trigger time and CPU and the median of Spark's ``addBatch`` and
``queryPlanning``. Not collected by pytest.
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
import sparkwax.engine.planning.plan as plan  # noqa: E402


def _counts():
    from pyspark.sql import functions as F

    counts = F.col(plan.METRICS_COLUMN)
    only = F.coalesce(counts[len(plan.FIELDS)], F.lit(0)) == F.lit(plan.ONLY_METRICS)
    return counts, ~only


def _sums(result, step_id):
    """The observe and the counts-only filter, the metrics column kept."""
    from pyspark.sql import functions as F

    counts, kept = _counts()
    return result.observe(plan.PREFIX + step_id, *[
        F.coalesce(F.sum(counts[index]), F.lit(0)).alias(name)
        for index, name in enumerate(plan.FIELDS)]).where(kept)


def _projected(describe):
    """A ``plan._streaming_step`` with the description added by ``describe``
    (a projection) instead of the output type's metadata."""
    def streaming_step(grouped, function, out_schema, state_schema, timeout, step_id,
                       description):
        from pyspark.sql import types as T

        with_metrics = T.StructType(list(out_schema.fields) + [
            T.StructField(plan.METRICS_COLUMN, plan.metrics_type())])
        result = grouped.applyInPandasWithState(
            function, outputStructType=with_metrics, stateStructType=state_schema,
            outputMode="append", timeoutConf=timeout)
        return describe(_sums(result, step_id), description)
    return streaming_step


def _aliased(names, description, every):
    from pyspark.sql import functions as F

    return [F.col(f"`{n}`").alias(n, metadata={plan.STEP_METADATA: description})
            if every or i == 0 else F.col(f"`{n}`") for i, n in enumerate(names)]


def _project_every(frame, description):
    frame = frame.drop(plan.METRICS_COLUMN)
    return frame.select(*_aliased(frame.columns, description, True))


def _project_first(frame, description):
    frame = frame.drop(plan.METRICS_COLUMN)
    return frame.select(*_aliased(frame.columns, description, False))


def _merged_first(frame, description):
    names = [n for n in frame.columns if n != plan.METRICS_COLUMN]
    return frame.select(*_aliased(names, description, False))


def _no_observe(result, step_id):
    return result.where(_counts()[1]).drop(plan.METRICS_COLUMN)


def _one_sum(result, step_id):
    from pyspark.sql import functions as F

    counts, kept = _counts()
    return result.observe(plan.PREFIX + step_id, F.coalesce(F.sum(counts[0]), F.lit(0))
                          .alias(plan.FIELDS[0])).where(kept).drop(plan.METRICS_COLUMN)


PATCHES = {"bare": {}, "sparkwax": {},
           "sw-project": {"_streaming_step": _projected(_project_every)},
           "sw-project1": {"_streaming_step": _projected(_project_first)},
           "sw-merged1": {"_streaming_step": _projected(_merged_first)},
           "sw-noobs": {"_observed": _no_observe},
           "sw-onesum": {"_observed": _one_sum},
           "sw-none": {"_observed": lambda result, step_id: result.drop(plan.METRICS_COLUMN),
                       "described": lambda schema, description: schema}}


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
    originals = {name: getattr(plan, name) for name in ("_observed", "described",
                                                         "_streaming_step")}
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
    base = next((q for q in queries if q.variant == "bare"), None)
    if base is not None:  # paired: each round ran every query once, back to back
        print("median per-round difference to bare (trigger / addBatch / queryPlanning):")
        for query in queries:
            if query is not base:
                print(f"  {query.variant:<11} " + " / ".join(
                    f"{statistics.median(_differences(query, base, k, durations)):+.1f}"
                    for k in ("triggerExecution", "addBatch", "queryPlanning")) + " ms")
    return 0


def _differences(query, base, name, durations):
    """Per round: ``query``'s duration ``name`` minus ``base``'s."""
    return [mine.get(name, 0) - theirs.get(name, 0)
            for mine, theirs in zip(durations[query.variant], durations[base.variant])]


if __name__ == "__main__":
    sys.exit(main())
