"""A logic in the app's own module: shipped as a zip vs pickled by value, cost per task.

    python benchmarks/app_module_shipping.py [--tasks 40] [--repeat 7] [--rows 20000]

The logic (``fraudbench.py``, a ~60-line module written to a temp folder
that the Python workers cannot import) reaches the workers either

* ``shipped``: in a zip added with ``addPyFile`` (what ``sparkwax submit``
  and ``sw.local_session`` do); the pickled step refers to it by name, and
  a worker imports it once;
* ``by-value``: ``cloudpickle.register_pickle_by_value(fraudbench)``; the
  module's classes and functions travel inside every task's pickled step.

Each mode runs in its own process (the by-value registry is process-wide):
``sw.stateful_batch`` over ``--rows`` rows and ``--tasks`` shuffle
partitions on local[2], written to the ``noop`` sink; one warm-up, then
``--repeat`` runs. Printed: the pickled step's size, the median wall time
per run and per task, and a micro-benchmark of unpickling the step in one
Python process (what a reused worker does per task).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

MODULE = textwrap.dedent('''
    """A fraud-scoring logic with helpers, as an app would split it out."""
    from datetime import timedelta

    import sparkwax as sw

    LIMITS = {"low": 10, "mid": 100, "high": 1000}
    WINDOW = timedelta(minutes=5)


    def band(amount):
        for name, limit in sorted(LIMITS.items(), key=lambda item: item[1]):
            if amount <= limit:
                return name
        return "over"


    def score(count, total):
        return round(total / max(count, 1), 3)


    class Rule:
        def __init__(self, name, threshold):
            self.name, self.threshold = name, threshold

        def check(self, count, total):
            return total > self.threshold * count


    RULES = [Rule("mid-average", 50), Rule("high-average", 500)]


    class Totals(sw.StatefulBatchLogic):
        """Running count and total per key; one row per activation."""

        def __init__(self, resume=None):
            self.count, self.total = resume or (0, 0)

        def on_batch(self, values):
            self.count += len(values)
            self.total += sum(values)
            flagged = sum(rule.check(self.count, self.total) for rule in RULES)
            return [(self.count, score(self.count, self.total), flagged)], sw.RETAIN

        def snapshot(self):
            return (self.count, self.total)
''')


def child(mode: str, tasks: int, repeat: int, rows: int) -> dict:
    folder = tempfile.mkdtemp(prefix="sw-bench-module-")
    with open(os.path.join(folder, "fraudbench.py"), "w") as handle:
        handle.write(MODULE)
    sys.path.insert(0, folder)
    os.chdir(tempfile.mkdtemp(prefix="sw-bench-cwd-"))  # workers cannot import from cwd
    os.environ["SPARKWAX_SHIP_APP"] = "false"           # this benchmark decides itself
    import fraudbench
    from pyspark import cloudpickle

    import sparkwax as sw
    from sparkwax.engine.deploy.shipping import zip_bytes

    spark = sw.local_session("local[2]", shuffle_partitions=tasks,
                             conf={"spark.sql.adaptive.enabled": "false"})
    if mode == "shipped":
        archive = os.path.join(folder, "app-modules-bench.zip")
        with open(archive, "wb") as handle:
            handle.write(zip_bytes([(fraudbench.__file__, "fraudbench.py")]))
        spark.sparkContext.addPyFile(archive)
    else:
        cloudpickle.register_pickle_by_value(fraudbench)
    step_size = len(cloudpickle.dumps(lambda: fraudbench.Totals))
    loads = _loads_per_call(cloudpickle.dumps(lambda: fraudbench.Totals))
    frame = spark.range(rows).selectExpr("cast(id % 500 as string) as k", "id % 997 as v")
    out = sw.stateful_batch(frame, key="k", builder=fraudbench.Totals, value="v",
                            output_schema="n long, avg double, flagged long")
    walls = []
    for run in range(repeat + 1):
        started = time.perf_counter()
        out.write.format("noop").mode("overwrite").save()
        if run:  # the first run warms the JVM and the workers
            walls.append(time.perf_counter() - started)
    spark.stop()
    wall = statistics.median(walls)
    return {"mode": mode, "tasks": tasks, "step_bytes": step_size, "loads_us": loads * 1e6,
            "median_s": wall, "per_task_ms": wall / tasks * 1000,
            "runs_s": [round(w, 3) for w in walls]}


def _loads_per_call(payload: bytes, calls: int = 2000) -> float:
    from pyspark import cloudpickle

    cloudpickle.loads(payload)
    started = time.perf_counter()
    for _ in range(calls):
        cloudpickle.loads(payload)
    return (time.perf_counter() - started) / calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--child", choices=["shipped", "by-value"])
    args = parser.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args.tasks, args.repeat, args.rows)))
        return 0
    results = []
    for mode in ("shipped", "by-value", "shipped", "by-value"):  # alternate: drifting load
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode,
                               "--tasks", str(args.tasks), "--repeat", str(args.repeat),
                               "--rows", str(args.rows)], capture_output=True, text=True)
        line = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
        if done.returncode or not line:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        results.append(json.loads(line[0][len("RESULT "):]))
    print(f"{'mode':9} {'step bytes':>10} {'loads us':>9} {'median s':>9} {'ms/task':>8}  runs")
    for r in results:
        print(f"{r['mode']:9} {r['step_bytes']:>10} {r['loads_us']:>9.1f} {r['median_s']:>9.3f} "
              f"{r['per_task_ms']:>8.2f}  {r['runs_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
