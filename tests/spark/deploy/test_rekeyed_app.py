"""An app whose logic lives in a module beside it, with a re-keyed and
seeded step (Spark 4.0+): the step on ``transformWithStateInPandas`` also
runs in a Python worker Spark starts on the driver before the first
micro-batch (``engine/deploy/driver_workers.py``), which must import that
module too.

Run as ``python app/app.py`` (local master) and under ``sparkwax submit``
on ``local-cluster`` (its own executor JVM), each from a folder that is not
the app's, so that the module is importable only where it was shipped."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit import skip_unless_steps_follow

# the tier: one spark-submit test per line (tests/tier.py), this one from 4.0
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.lines(since="4.0", pool="submit")]

LOGIC = textwrap.dedent('''
    """The app's logic, in a module beside it."""
    import sparkwax as sw


    class Visits(sw.StatefulLogic):
        """A user's visits so far, sent on with the user's country."""

        def __init__(self, resume=None):
            self.n = resume or 0

        def on_item(self, value):
            self.n += 1
            return [{"country": value["country"], "n": self.n}], sw.RETAIN

        def snapshot(self):
            return self.n


    class Total(sw.StatefulLogic):
        """A country's sum of what it was sent."""

        def __init__(self, resume=None):
            self.total = resume or 0

        def on_item(self, value):
            self.total += value
            return [(self.total,)], sw.RETAIN

        def snapshot(self):
            return self.total
''')

APP = textwrap.dedent('''
    """Visits by user, re-keyed by country (seeded: 'us' starts at 10);
    both logics from flow_logic."""
    import argparse, json
    import sparkwax as sw
    from flow_logic import Total, Visits

    parser = argparse.ArgumentParser()
    for name in ("--input", "--output", "--checkpoint"):
        parser.add_argument(name)
    args = parser.parse_args()
    spark = sw.local_session()
    events = (spark.readStream.schema("user string, country string")
              .option("maxFilesPerTrigger", 1).json(args.input))
    visits = sw.stateful(events, key="user", builder=Visits, step_id="visits",
                         output_schema="country string, n long")
    totals = sw.stateful(visits.select("country", "n"), key="country", builder=Total,
                         value="n", output_schema="total long", step_id="totals",
                         seed=sw.seed_frame(spark, {"us": 10}, "country string"))
    sw.start(totals, checkpoint=args.checkpoint, path=args.output,
             trigger={"availableNow": True}).awaitTermination()
    rows = sorted(tuple(row) for row in spark.read.parquet(args.output).collect())
    print("rows " + json.dumps(rows), flush=True)
''')

EVENTS = [("a", "eu"), ("b", "us"), ("a", "eu"), ("c", "eu")]
TOTALS = [["eu", 1], ["eu", 3], ["eu", 4], ["us", 11]]


def run(command, tmp_path: Path, name: str) -> subprocess.CompletedProcess:
    """``command`` + the app's arguments, from a folder that is not the app's."""
    cwd = tmp_path / f"elsewhere-{name}"
    cwd.mkdir()
    env = {**os.environ, "SPARKWAX_SHIP_DIR": str(tmp_path / "ship")}
    env.pop("SPARKWAX_VERBOSE", None)
    arguments = ["--input", str(tmp_path / "in"), "--output", str(tmp_path / f"out-{name}"),
                 "--checkpoint", str(tmp_path / f"ck-{name}")]
    return subprocess.run([*command, *arguments], cwd=str(cwd), env=env, capture_output=True,
                          text=True, timeout=600, start_new_session=True)


def rows_of(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.split("rows ", 1)[1].splitlines()[0])


def test_a_rekeyed_seeded_step_imports_the_apps_module_as_python_and_under_submit(spark, tmp_path):
    skip_unless_steps_follow(spark)
    app = tmp_path / "app" / "app.py"
    app.parent.mkdir()
    app.write_text(APP)
    (app.parent / "flow_logic.py").write_text(LOGIC)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.json").write_text(
        "".join(json.dumps({"user": u, "country": c}) + "\n" for u, c in EVENTS))

    plain = run([sys.executable, str(app)], tmp_path, "python")
    assert rows_of(plain) == TOTALS

    submitted = run([sys.executable, "-m", "sparkwax.cli.commands.submit", str(app),
                     "--master", "local-cluster[1,1,1024]"], tmp_path, "submit")
    assert submitted.stderr.splitlines()[0].startswith("sparkwax: shipping app modules flow_logic")
    assert rows_of(submitted) == TOTALS
