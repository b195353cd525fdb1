"""A program's normal end is quiet: no ERROR line, no Java trace, and none
of the state store's known-benign warnings, with or without ``spark.stop()``.

- ``query.stop()`` after ``processAllAvailable()`` on a ProcessingTime step
  (which asks for a micro-batch at every trigger) interrupted the batch in
  flight: ``ERROR FileFormatWriter: Aborting job``; ``Query.stop`` now lets
  it end (``stopping.stop_quietly``). The restart on the same checkpoint
  printed two warnings per state partition (``... doesn't exist in
  loadedMaps``, ``StateStoreCoordinator endpoint not available``), now
  filtered (``logs.BENIGN``).
- A ``local-cluster`` app that returns without ``spark.stop()`` printed
  25-41 ERROR lines (executors killed and relaunched while the JVM shut
  down) and a ``RejectedExecutionException`` trace; ``local_session``'s
  exit hook (``session.ending``) now stops the queries and the session in
  order.

Each app runs in its own process; its stderr is read whole."""

import os
import subprocess
import sys
import textwrap

import pytest

from kit import REPO, stop_group
from test_quiet_stop import TRACE

APP = textwrap.dedent("""
    import json, os, sys
    import sparkwax as sw
    from sparkwax.testing.reference import Accumulator

    master, folder = sys.argv[1], sys.argv[2]
    os.makedirs(f"{folder}/in", exist_ok=True)
    with open(f"{folder}/in/1.json", "w") as out:
        for i in range(6):
            out.write(json.dumps({"key": f"k{i % 3}", "ts": f"2024-01-01T00:0{i}:00Z",
                                  "value": i}) + "\\n")
    spark = sw.local_session(master, shuffle_partitions=2)

    def start():
        stream = spark.readStream.schema("key string, ts timestamp, value long") \\
            .json(f"{folder}/in")
        step = sw.stateful(stream, key="key", builder=Accumulator, step_id="s",
                           output_schema="kind string, a long, b long", time=sw.ProcessingTime())
        return sw.start(step, checkpoint=f"{folder}/ck", path=f"{folder}/out",
                        trigger={"processingTime": "100 milliseconds"})

    query = start()
    query.processAllAvailable()
    query.stop()
    print("stopped", flush=True)
    query = start()  # the restart reads every partition's state from its files
    query.processAllAvailable()
    print("returned", flush=True)  # no query.stop(), no spark.stop()
""")

BENIGN = ("loadedMaps", "StateStoreCoordinator endpoint not available")


def _run(tmp_path, master: str) -> str:
    """Run the app on ``master``; its stderr (after checking it ended well)."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("SPARKWAX_VERBOSE", None)
    process = subprocess.Popen([sys.executable, str(app), master, str(tmp_path / "run")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, env=env)
    try:
        out, err = process.communicate(timeout=480)
    finally:
        stop_group(process)  # what the test started, by its own id (its group)
    assert process.returncode == 0, err[-3000:]
    assert out.split() == ["stopped", "returned"], (out, err[-3000:])
    return err


def _noise(err: str):
    return [line for line in err.splitlines()
            if " ERROR " in line or TRACE.search(line) or any(b in line for b in BENIGN)]


@pytest.mark.slow
def test_stop_after_process_all_available_restart_and_end_print_nothing(tmp_path):
    err = _run(tmp_path, "local[2]")
    assert _noise(err) == [], "\n".join(_noise(err)[:20]) + "\n---\n" + err[-3000:]


@pytest.mark.slow
def test_a_local_cluster_app_that_ends_without_stopping_spark_prints_no_error(tmp_path):
    err = _run(tmp_path, "local-cluster[2,1,1024]")
    assert _noise(err) == [], "\n".join(_noise(err)[:20]) + "\n---\n" + err[-3000:]
