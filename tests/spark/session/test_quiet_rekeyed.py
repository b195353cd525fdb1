"""A seeded, re-keyed query prints no WARN line at sparkwax's default log
level (WARN), in a fresh process (the log configuration a new app gets).

Before, each such run printed the state server's "Value state sparkwax
doesn't contain a value" (a new key's row read with get()), its "No more
data to read from the socket" (pyspark's driver-side worker ends without
closing its handle: Spark's own, filtered), ``TimerStateImpl``'s "Failed to
register timer ... since it already exists" and "Failed to delete timer
... does not exist" (a timeout re-armed at the very time that fired, which
PySpark then deleted: the key lost its timer), and four blocks of the
driver-side worker's own lines ("Streaming TransformWithStateInPandas
Python worker ...") per step. That worker's first line ("Starting ...")
is printed before any sparkwax code runs in it, and stays.

The input makes the collision: key ``a``'s timer is due at 10:00:00.000,
armed at 09:59:59.999, and ``z``'s event at 10:01:59.999 brings the
watermark (2 minutes behind) to exactly 09:59:59.999: Spark fires the
timer there, a timeout only once the watermark passes it."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from kit import REPO, skip_unless_steps_follow

pytestmark = [pytest.mark.spark, pytest.mark.lines(since="4.0")]

APP = textwrap.dedent("""
    import json, os, sys
    from datetime import datetime, timezone
    import sparkwax as sw
    from sparkwax.testing.reference import Accumulator
    from kit import PassThrough

    work = sys.argv[1]
    source = os.path.join(work, "in")
    os.makedirs(source)
    rows = [("a", "10:00:00.000", 5), ("z", "10:01:59.999", 1), ("a", "10:03:00.000", 1)]
    for number, (key, clock, value) in enumerate(rows):
        with open(os.path.join(source, f"{number:02d}.json"), "w") as handle:
            handle.write(json.dumps({"key": key, "ts": f"2024-01-01T{clock}Z",
                                     "value": value}) + "\\n")

    def at(clock):
        return datetime.fromisoformat(f"2024-01-01T{clock}+00:00")

    spark = sw.local_session("local[2]", shuffle_partitions=1)
    stream = spark.readStream.schema("key string, ts timestamp, value long") \\
        .option("maxFilesPerTrigger", 1).json(source)
    seed = sw.seed_frame(spark, {"b": (7, 1, at("10:01:00"), at("10:05:00"))}, "key string")
    # the seeded step follows another and is the query's last: PySpark 4.0
    # drops a seed's snapshot column when its step's output is transformed
    # (SPARK-52195; tests/spark/planning/test_seed_spark.py)
    first = sw.stateful(stream, key="key", builder=PassThrough, step_id="pass",
                        output_schema="ts timestamp, value long")
    second = sw.stateful(first, key="key", builder=Accumulator, seed=seed, step_id="acc",
                         output_schema="kind string, a long, b long",
                         time=sw.EventTime("ts", watermark="2 minutes"))
    query = sw.start(second, checkpoint=os.path.join(work, "checkpoint"),
                     path=os.path.join(work, "out"), trigger={"availableNow": True})
    query.awaitTermination()
    print("rows", spark.read.parquet(os.path.join(work, "out")).count(), flush=True)
""")

WORKER = "TransformWithStateInPandas Python worker"


@pytest.fixture(autouse=True)
def _a_line_that_chains(spark):
    skip_unless_steps_follow(spark)


def test_a_seeded_rekeyed_run_prints_no_warning(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    env = {name: value for name, value in os.environ.items()
           if name not in ("SPARKWAX_VERBOSE", "SPARKWAX_SPARK_LOG_LEVEL")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests"),
                                     *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, str(tmp_path / "app.py"), str(tmp_path / "run")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^rows [1-9]", done.stdout, re.M), done.stdout
    warnings = [line for line in done.stderr.splitlines() if re.search(r"\bWARN\b", line)]
    assert warnings == [], "\n".join(warnings)
    worker = [line for line in done.stderr.splitlines()
              if WORKER in line and line != f"Starting Streaming {WORKER}."]
    assert worker == [], "\n".join(worker)
