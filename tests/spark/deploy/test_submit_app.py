"""``sparkwax submit`` on day two: the app's own modules reach the executors
without ``--py-files``, and a failed app ends with sparkwax's short block.

Both start spark-submit (their own JVMs), from a working directory that is
not the app's folder. ``local-cluster[1,1,1024]`` runs a separate executor
JVM, whose Python workers start in the executor's work folder: a module next
to the app is importable there only if it is shipped."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LOGIC_APP = REPO / "examples" / "logic_module" / "app.py"


def submit(args, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARKWAX_SHIP_DIR": str(tmp_path / "ship")}
    env.pop("SPARKWAX_VERBOSE", None)
    return subprocess.run([sys.executable, "-m", "sparkwax.cli.commands.submit", *args], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=600,
                          start_new_session=True)


def write_readings(tmp_path: Path) -> Path:
    folder = tmp_path / "readings"
    folder.mkdir()
    for batch, rows in enumerate([[("s1", 1.0), ("s2", 5.0), ("s1", 2.0)],
                                  [("s1", 3.0), ("s2", 4.0), ("s1", 1.0)]]):
        path = folder / f"batch-{batch}.json"
        path.write_text("".join(json.dumps({"sensor": s, "seq": batch * 10 + i, "value": v})
                                + "\n" for i, (s, v) in enumerate(rows)))
        os.utime(path, (1_600_000_000 + batch,) * 2)
    return folder


STREAKS = [["s1", 1, 1], ["s1", 1, 3], ["s1", 2, 2], ["s1", 3, 3], ["s2", 1, 1], ["s2", 1, 1]]


@pytest.mark.lines(pool="submit")  # the tier: one spark-submit test per line (tests/tier.py)
def test_a_sibling_module_reaches_a_local_cluster_without_py_files(tmp_path):
    folder = write_readings(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = submit([str(LOGIC_APP), "--master", "local-cluster[1,1,1024]",
                   "--input", str(folder), "--output", str(tmp_path / "out"),
                   "--checkpoint", str(tmp_path / "ck"), "--where"], elsewhere, tmp_path)
    assert done.returncode == 0, done.stderr[-5000:]
    first = done.stderr.splitlines()[0]
    assert first == "sparkwax: shipping app modules streaks (1 file, 1 KB)", first
    assert "--py-files" in done.stderr.splitlines()[1]
    origins = json.loads(done.stdout.split("origins ", 1)[1].splitlines()[0])
    assert "/app-modules-" in origins["streaks"] and ".zip/streaks.py" in origins["streaks"]
    rows = json.loads(done.stdout.split("rows ", 1)[1].splitlines()[0])
    assert rows == STREAKS
    assert " INFO " not in done.stderr  # Spark's logs at WARN from the JVM's start


def test_plain_python_ships_the_sibling_module_too(tmp_path):
    """``python app/app.py`` from another folder: local[*]'s workers start in
    that folder, where ``streaks`` is not; the engine ships it."""
    folder = write_readings(tmp_path)
    env = {**os.environ, "SPARKWAX_SHIP_DIR": str(tmp_path / "ship")}
    done = subprocess.run([sys.executable, str(LOGIC_APP), "--input", str(folder),
                           "--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"),
                           "--where"], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=600, start_new_session=True)
    assert done.returncode == 0, done.stderr[-5000:]
    origins = json.loads(done.stdout.split("origins ", 1)[1].splitlines()[0])
    assert "/app-modules-" in origins["streaks"] and ".zip/streaks.py" in origins["streaks"]
    assert json.loads(done.stdout.split("rows ", 1)[1].splitlines()[0]) == STREAKS
    assert " INFO " not in done.stderr


FAILING_APP = textwrap.dedent('''
    """The logic fails for key 'b' in the second micro-batch."""
    import argparse, sys
    import sparkwax as sw

    class Ratio(sw.StatefulLogic):
        def __init__(self, resume=None):
            self.total = resume or 0

        def on_item(self, value):
            self.total += 10 // value["n"]
            return [(self.total,)], sw.RETAIN

        def snapshot(self):
            return self.total

    parser = argparse.ArgumentParser()
    parser.add_argument("--input")
    parser.add_argument("--output")
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    spark = sw.local_session()
    rows = (spark.readStream.schema("k string, n long").option("maxFilesPerTrigger", 1)
            .json(args.input))
    out = sw.stateful(rows, key="k", builder=Ratio, output_schema="total long", step_id="ratio")
    sw.start(out, checkpoint=args.checkpoint, path=args.output,
             trigger={"availableNow": True}).awaitTermination()
''')


def test_a_task_error_ends_the_output_with_the_short_block(tmp_path):
    app = tmp_path / "app" / "ratio_app.py"
    app.parent.mkdir()
    app.write_text(FAILING_APP)
    folder = tmp_path / "in"
    folder.mkdir()
    for number, line in enumerate(['{"k": "a", "n": 2}', '{"k": "b", "n": 0}']):
        (folder / f"{number}.json").write_text(line + "\n")
        os.utime(folder / f"{number}.json", (1_600_000_000 + number,) * 2)
    done = submit([str(app), "--master", "local[1]", "--input", str(folder),
                   "--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck")],
                  tmp_path, tmp_path)
    assert done.returncode == 1, done.stderr[-5000:]
    last = done.stderr.rstrip("\n").splitlines()[-6:]
    assert last == [
        "sparkwax: the app failed: CallbackError",
        "  step 'ratio', key 'b', callback on_item",
        "  message: on_item raised ZeroDivisionError('integer division or modulo by zero') "
        "on this value (got {'n': 0})",
        "  where: a task on an executor, micro-batch 1",
        "  to do: fix on_item of the logic; reproduce it offline with sparkwax.testing.run on "
        "this key's items",
        "  (Spark's full trace: rerun with --verbose or SPARKWAX_VERBOSE=1)"], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "PYTHON_EXCEPTION" not in done.stderr
    assert len(done.stderr) < 6000, done.stderr  # was ~28 KB: the trace four times
