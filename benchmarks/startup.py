"""Time to first output: a fresh process to its first committed micro-batch,
bare applyInPandasWithState vs sparkwax's per-key and packed hosts.

    python benchmarks/startup.py [--repeat 5] [--warmup 1]
        [--variants bare per_key packed] [--rows 20] [--keys 10]
        [--master local[*]] [--profile]

Every run is its own Python process (so the JVM's start, the Python
workers' start and their imports all count), started by this script with
its wall clock passed along. Each child: ``sw.local_session(master)`` (the
same session confs for every variant), a streaming parquet source over one
file of ``--rows`` rows and ``--keys`` keys (written once with pyarrow, no
Spark job), a running count per key, the ``noop`` sink, a fresh checkpoint;
``processAllAvailable()`` returns once batch 0 has committed.

* ``bare``     ``groupBy("key").applyInPandasWithState`` of a hand-written
               count (pickled int state, one 1-row frame out per key),
               started with ``writeStream.start()``.
* ``per_key``  ``sw.stateful_batch(value="v")``, a ``StatefulBatchLogic``
               emitting the running count, ``host="per_key"``, started with
               ``sw.start`` (its checkpoint checks included).
* ``packed``   the same with ``host="packed"``.

The logic and the bare function live in this script (``__main__``: pickled
by value, as an app's would be). sparkwax's bytecode is compiled first,
as ``pip install`` leaves it (``compile_sparkwax``). ``--warmup`` rounds
(not counted) bring the jars and libraries into the page cache; then the
rounds run the variants in a rotating order (load that drifts on a shared
machine hits all alike). Printed per variant, median and range over the
rounds:

* ``batch0 ms``: Spark's ``durationMs.triggerExecution`` of batch 0 (the
  micro-batch itself: planning, both stages, the Python workers' start,
  the commit);
* ``to commit s``: this script's ``Popen`` to ``processAllAvailable()``
  returning (interpreter and imports, the JVM, the session, the plan,
  ``start``, batch 0);
* ``cpu s``: CPU seconds at that moment of the child's whole process tree
  (read from /proc), and its medians by process and JVM thread: the
  driver's Python, the Python daemon and workers, the JVM's task threads,
  its stream execution thread (the micro-batch's planning and commit), its
  JIT compilers, GC and the rest (py4j's threads: the session, the plan and
  ``start`` as the driver's calls run them); the JIT's share is the least
  steady;
* ``codegen``: the classes Spark compiled (its ``CodegenMetrics``) up to
  the first commit, median;
* the phases before batch 0 (median): import, session, plan, start.

Then each sparkwax host over bare: the median of the per-round ratios
(round r of the host / round r of bare), for batch 0, to commit and CPU.
``--profile`` runs one child per variant under cProfile (driver side) and
prints the top functions by cumulative time instead.
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = ("bare", "per_key", "packed")
_T0_ENV = "SW_STARTUP_T0"


def bare_count(key, pdfs, state):
    """The hand-written floor: pickled int state, len(pdf) per chunk."""
    import pandas as pd

    n = pickle.loads(state.get[0]) if state.exists else 0
    for pdf in pdfs:
        n += len(pdf)
    state.update((pickle.dumps(n),))
    yield pd.DataFrame({"key": [key[0]], "count": [n]})


def counter_class():
    """A running count per key, emitted once per activation (as bare does);
    built here so that the child imports sparkwax only after its clock starts."""
    import sparkwax as sw

    class Counter(sw.StatefulBatchLogic):
        def __init__(self, resume=None):
            self.count = resume or 0

        def on_batch(self, values):
            self.count += len(values)
            return [self.count], sw.RETAIN

        def snapshot(self):
            return self.count
    return Counter


CPU_KINDS = ("driver", "python workers", "jvm tasks", "jvm query", "jvm jit", "jvm gc",
             "jvm other")


def _thread_kind(name: str) -> str:
    """A JVM thread's kind by its (15-character) name."""
    if name.startswith(("C1 Compiler", "C2 Compiler")):
        return "jvm jit"
    if name.startswith(("GC Thread", "G1 ", "VM Thread")):
        return "jvm gc"
    if name.startswith("Executor task"):
        return "jvm tasks"
    if name.startswith("stream executi"):
        return "jvm query"
    return "jvm other"


def _stat(path: str):
    """(name, fields after the name) of a /proc stat file, or None."""
    try:
        with open(path) as handle:
            head, rest = handle.read().split(" (", 1)[1].rsplit(")", 1)
    except (OSError, IndexError, ValueError):
        return None
    return head, rest.split()


def tree_cpu_seconds(root: int) -> dict:
    """CPU seconds of ``root`` and its living descendants (with their reaped
    children's) by kind (``CPU_KINDS``): the driver (``root``), the Python
    daemon and workers, and the JVM by thread (its live threads: task
    threads, the query's stream thread, JIT compilers, GC, the rest:
    py4j's, Spark's own). {} without /proc. (Like proc_cpu.tree_cpu, inlined:
    the child imports no module of this folder, which sparkwax would ship.)"""
    if not os.path.isdir("/proc"):
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for name in os.listdir("/proc"):
        found = _stat(f"/proc/{name}/stat") if name.isdigit() else None
        if found:
            table[int(name)] = (int(found[1][1]), found[0],
                                sum(int(x) for x in found[1][11:15]) / ticks)
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    totals = dict.fromkeys(CPU_KINDS, 0.0)
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        if pid not in table:
            continue
        command, seconds = table[pid][1], table[pid][2]
        if pid == root or command.startswith("python"):
            totals["driver" if pid == root else "python workers"] += seconds
            continue
        threads = 0.0
        for tid in os.listdir(f"/proc/{pid}/task") if command == "java" else ():
            found = _stat(f"/proc/{pid}/task/{tid}/stat")
            if found:
                used = (int(found[1][11]) + int(found[1][12])) / ticks
                totals[_thread_kind(found[0])] += used
                threads += used
        totals["jvm other"] += max(seconds - threads, 0.0)  # exited threads, the launcher
    return totals


def child(variant: str, source: str, workdir: str, master: str) -> dict:
    t0 = float(os.environ[_T0_ENV])
    marks = {}
    import sparkwax as sw
    from pyspark.sql import SparkSession  # noqa: F401  (what a bare app imports)

    marks["import"] = time.time()
    spark = sw.local_session(master)
    marks["session"] = time.time()
    codegen = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics \
        .METRIC_COMPILATION_TIME()  # Spark's count of generated classes compiled
    stream = spark.readStream.schema("key long, v long").parquet(source)
    checkpoint = os.path.join(workdir, "checkpoint")
    if variant == "bare":
        out = stream.groupBy("key").applyInPandasWithState(
            bare_count, outputStructType="key long, count long", stateStructType="s binary",
            outputMode="append", timeoutConf="NoTimeout")
        marks["plan"] = time.time()
        query = out.writeStream.format("noop").option("checkpointLocation", checkpoint) \
            .outputMode("append").start()
    else:
        out = sw.stateful_batch(stream, key="key", value="v", builder=counter_class(),
                                output_schema="count long", host=variant)
        marks["plan"] = time.time()
        query = sw.start(out, checkpoint=checkpoint, format="noop")
    marks["start"] = time.time()
    query.processAllAvailable()
    marks["commit"] = time.time()
    cpu_by = tree_cpu_seconds(os.getpid())
    compiled = int(codegen.getCount())
    progress = query.recentProgress[0]
    query.stop()
    spark.stop()
    phases, last = {}, t0
    for name, at in marks.items():
        phases[name] = at - last
        last = at
    return {"variant": variant, "batch0_ms": progress["durationMs"]["triggerExecution"],
            "duration_ms": progress["durationMs"], "to_commit_s": marks["commit"] - t0,
            "cpu_s": sum(cpu_by.values()) if cpu_by else float("nan"), "cpu_by": cpu_by,
            "codegen": compiled,
            "phases": phases}


def profile_child(variant: str, source: str, workdir: str, master: str) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    result = profiler.runcall(child, variant, source, workdir, master)
    print(f"{variant}: batch 0 {result['batch0_ms']} ms, to commit {result['to_commit_s']:.2f} s")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


def write_source(folder: str, rows: int, keys: int) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = os.path.join(folder, "source")
    os.makedirs(source)
    table = pa.table({"key": pa.array([i % keys for i in range(rows)], pa.int64()),
                      "v": pa.array(range(rows), pa.int64())})
    pq.write_table(table, os.path.join(source, "part-0000.parquet"))
    return source


def run_child(variant: str, source: str, folder: str, master: str, profile: bool) -> dict:
    workdir = tempfile.mkdtemp(prefix=f"{variant}-", dir=folder)
    command = [sys.executable, os.path.abspath(__file__), "--child", variant, "--source", source,
               "--workdir", workdir, "--master", master] + (["--profile"] if profile else [])
    env = dict(os.environ, **{_T0_ENV: repr(time.time())})
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    shutil.rmtree(workdir, ignore_errors=True)
    if profile:
        print(done.stdout)
        return {}
    line = [text for text in done.stdout.splitlines() if text.startswith("RESULT ")]
    if done.returncode or not line:
        sys.exit(f"{variant} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(line[0][len("RESULT "):])


def spread(values) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"


def report(results: dict, variants) -> None:
    print(f"{'variant':8} {'batch0 s':>20} {'to commit s':>20} {'cpu s':>20} {'codegen':>8}"
          f"  phases s: import, session, plan, start")
    for variant in variants:
        runs = results[variant]
        phases = [statistics.median(r["phases"][p] for r in runs)
                  for p in ("import", "session", "plan", "start")]
        print(f"{variant:8} {spread([r['batch0_ms'] / 1000 for r in runs]):>20} "
              f"{spread([r['to_commit_s'] for r in runs]):>20} "
              f"{spread([r['cpu_s'] for r in runs]):>20} "
              f"{statistics.median(r['codegen'] for r in runs):>8.0f}  "
              + ", ".join(f"{p:.2f}" for p in phases))
    print(f"\ncpu s by process and JVM thread, median:\n  {'':8}"
          + "".join(f"{kind:>15}" for kind in CPU_KINDS))
    for variant in variants:
        print(f"  {variant:8}" + "".join(
            f"{statistics.median(r['cpu_by'].get(kind, 0) for r in results[variant]):>15.2f}"
            for kind in CPU_KINDS))
    if "bare" not in results:
        return
    print("\nover bare (median of per-round ratios):")
    for variant in variants:
        if variant == "bare":
            continue
        ratios = {name: statistics.median(r[name] / b[name] for r, b in
                                          zip(results[variant], results["bare"]))
                  for name in ("batch0_ms", "to_commit_s", "cpu_s")}
        print(f"  {variant:8} batch 0 {ratios['batch0_ms']:.2f}x, to commit "
              f"{ratios['to_commit_s']:.2f}x, cpu {ratios['cpu_s']:.2f}x")
    steps = sorted({name for runs in results.values() for r in runs for name in r["duration_ms"]})
    print("\nbatch 0's durationMs, median (ms):")
    print(f"  {'':18}" + "".join(f"{v:>9}" for v in variants))
    for name in steps:
        print(f"  {name:18}" + "".join(
            f"{statistics.median(r['duration_ms'].get(name, 0) for r in results[v]):>9,.0f}"
            for v in variants))


def compile_sparkwax() -> str:
    """sparkwax's bytecode, compiled as ``pip install`` leaves it (an
    editable install under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise
    compile every module in every process; pyspark's, pandas' and pyarrow's
    bytecode was compiled at their install)."""
    spec = importlib.util.find_spec("sparkwax")
    folders = list(spec.submodule_search_locations or ()) if spec else []
    done = all(compileall.compile_dir(folder, quiet=1) for folder in folders)
    return "sparkwax's bytecode compiled" if folders and done else "sparkwax not compiled"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", choices=VARIANTS)
    parser.add_argument("--source")
    parser.add_argument("--workdir")
    args = parser.parse_args(argv)
    if args.child:
        if args.profile:
            profile_child(args.child, args.source, args.workdir, args.master)
        else:
            result = child(args.child, args.source, args.workdir, args.master)
            print("RESULT " + json.dumps(result), flush=True)
        return 0
    folder = tempfile.mkdtemp(prefix="sw-startup-")
    try:
        source = write_source(folder, args.rows, args.keys)
        if args.profile:
            for variant in args.variants:
                run_child(variant, source, folder, args.master, True)
            return 0
        print(f"{args.repeat} rounds after {args.warmup} warm-up, {args.rows} rows over "
              f"{args.keys} keys, master {args.master}, load average "
              f"{os.getloadavg()[0]:.1f}; {compile_sparkwax()}", flush=True)
        for _ in range(args.warmup):  # the jars and libraries into the page cache
            for variant in args.variants:
                run_child(variant, source, folder, args.master, False)
        results = {variant: [] for variant in args.variants}
        for round_ in range(args.repeat):
            shift = round_ % len(args.variants)
            for variant in args.variants[shift:] + args.variants[:shift]:
                result = run_child(variant, source, folder, args.master, False)
                results[variant].append(result)
                print(f"  round {round_} {variant:8} batch 0 {result['batch0_ms']:>6,} ms, to "
                      f"commit {result['to_commit_s']:.2f} s, cpu {result['cpu_s']:.2f} s",
                      flush=True)
        print()
        report(results, args.variants)
        print(f"\nload average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
