"""``sparkwax submit``: help, the exact command it prints, and a real run on local[*]."""

import importlib.util
import json
import os
import random
import shlex
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sparkwax import cli
from sparkwax.cli.commands import submit
from sparkwax.engine.deploy import shipping
from sparkwax.engine.session import log_levels as logs

from kit import REPO

CLUSTER_APP = REPO / "examples" / "cluster_app.py"
SPARK_SUBMIT = os.path.join(submit.spark_home(), "bin", "spark-submit")


def printed_command(capsys, *argv):
    """The environment and the command, without the log configuration (tested
    in tests/unit/engine/deploy/test_app_modules.py)."""
    assert cli.main(["submit", "--dry-run", *argv]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    words = shlex.split(lines[0])
    env = dict(w.split("=", 1) for w in words if "=" in w and w.split("=")[0].isupper())
    words = words[len(env):]
    at = words.index(f"{logs.CONF_KEY}={logs.java_option('WARN', False)}")
    assert words[at - 1] == "--conf" and env.pop(logs.ENV_KEY) == "WARN"
    return env, words[:at - 1] + words[at + 1:]


def test_help_explains_the_command(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["submit", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for expected in ("usage: sparkwax submit APP.py [--master URL] [--checkpoint DIR]",
                     "-- SPARK-SUBMIT ARGS", "SPARK_HOME", "PYSPARK_PYTHON", "--py-files",
                     "--checkpoint DIR", "--python PATH", "--ship", "--dry-run", "examples:",
                     "docs/deploy.md"):
        assert expected in text, expected
    assert "submit" in cli.build_parser().format_help()


def test_local_command_sets_the_environment_and_ships_nothing(capsys):
    env, words = printed_command(capsys, str(CLUSTER_APP), "--input", "in", "--output", "out",
                                 "--checkpoint", "ck")
    assert env == {"SPARK_HOME": submit.spark_home(), "PYSPARK_DRIVER_PYTHON": sys.executable,
                   "PYSPARK_PYTHON": sys.executable}
    assert words == [SPARK_SUBMIT, str(CLUSTER_APP), "--input", "in", "--output", "out",
                     "--checkpoint", "ck"]


def test_cluster_command_ships_the_zip_and_passes_the_rest_through(capsys):
    env, words = printed_command(
        capsys, "--master", "spark://127.0.0.1:7077", str(CLUSTER_APP), "--input", "in",
        "--checkpoint", "/data/ck", "--output", "out", "--python", "/opt/py/bin/python",
        "--", "--conf", "spark.sql.shuffle.partitions=4", "--py-files", "a.py,b.zip",
        "--executor-memory", "1g")
    assert env["PYSPARK_PYTHON"] == "/opt/py/bin/python"
    assert env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    zip_path = words[words.index("--py-files") + 1].split(",")[0]
    assert os.path.basename(zip_path).startswith("sparkwax-") and os.path.isfile(zip_path)
    assert words == [SPARK_SUBMIT, "--master", "spark://127.0.0.1:7077",
                     "--py-files", f"{zip_path},a.py,b.zip",
                     "--conf", "spark.sql.shuffle.partitions=4", "--executor-memory", "1g",
                     str(CLUSTER_APP), "--input", "in", "--output", "out",
                     "--checkpoint", "/data/ck"]


def test_ship_setting_is_passed_to_the_engine_too(capsys):
    _, words = printed_command(capsys, str(CLUSTER_APP), "--master", "yarn", "--ship", "false")
    assert "--py-files" not in words
    assert words[1:5] == ["--master", "yarn", "--conf", "spark.sparkwax.ship=false"]
    _, words = printed_command(capsys, str(CLUSTER_APP), "--ship", "true")
    assert words[1] == "--py-files" and "sparkwax-" in words[2]
    _, words = printed_command(capsys, str(CLUSTER_APP), "--master", "yarn", "--",
                               "--conf", "spark.sparkwax.ship=false")
    assert "--py-files" not in words  # the engine's conf, given to spark-submit, is honoured


def test_app_options_that_look_alike_stay_with_the_app():
    own, app_args, spark_args = submit.split_rest(
        ["--checkpoint-interval", "5", "--mast", "x", "-h", "--", "--master", "yarn"])
    assert own.master is None and own.checkpoint is None
    assert app_args == ["--checkpoint-interval", "5", "--mast", "x", "-h"]
    assert spark_args == ["--master", "yarn"]


def test_missing_app_file_is_an_error(capsys, tmp_path):
    assert cli.main(["submit", str(tmp_path / "nope.py")]) == 2
    assert "no such app file" in capsys.readouterr().err


def load_cluster_app():
    spec = importlib.util.spec_from_file_location("cluster_app", CLUSTER_APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_payments(folder: Path, files: int, seed: str):
    """One JSON file per micro-batch (mtimes in order); returns the offline script."""
    from sparkwax.testing import Batch

    rng = random.Random(seed)
    folder.mkdir(parents=True)
    batches, clock = [], datetime(2024, 1, 1, tzinfo=timezone.utc)
    for number in range(files):
        items = []
        for _ in range(rng.randint(3, 8)):
            clock += timedelta(seconds=rng.randint(5, 120))
            items.append((rng.choice("abcdef"), {
                "ts": clock - timedelta(seconds=rng.randint(0, 30)),
                "amount": rng.randint(1, 100)}))
        path = folder / f"part-{number:03d}.json"
        path.write_text("".join(json.dumps({"card": card, "ts": v["ts"].isoformat(),
                                            "amount": v["amount"]}) + "\n"
                                for card, v in items))
        os.utime(path, (1_600_000_000 + number,) * 2)
        batches.append(Batch(items))
    return batches


def parquet_bursts(folder: Path) -> Counter:
    """Output rows read with pyarrow (Spark writes INT96 UTC instants: naive)."""
    import pyarrow.parquet as pq

    def utc(value):
        return value.to_pydatetime().replace(tzinfo=timezone.utc)

    return Counter((r["card"], utc(r["start"]), utc(r["end"]), r["payments"], r["total"])
                   for r in pq.read_table(str(folder)).to_pylist())


def offline_bursts(batches) -> Counter:
    from sparkwax.testing import run

    app = load_cluster_app()
    result = run(app.Burst, batches, time=app.TIME)
    return Counter((key, *value) for key, value in result.outputs)


@pytest.mark.slow
def test_submit_runs_an_example_on_the_embedded_default(tmp_path):
    """No --master: spark-submit's local[*]; the __main__ logic travels by value."""
    batches = write_payments(tmp_path / "in", 4, "local")
    command = [sys.executable, "-m", "sparkwax.cli.commands.submit", str(CLUSTER_APP),
               "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
               "--checkpoint", str(tmp_path / "ck")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=400,
                          cwd=str(tmp_path), start_new_session=True)
    assert done.returncode == 0, done.stderr[-4000:]
    printed = done.stderr.splitlines()[0]
    assert "bin/spark-submit --conf spark.driver.defaultJavaOptions=" in printed
    assert f" {CLUSTER_APP} --input " in printed and " INFO " not in done.stderr
    assert "done on local[*]" in done.stdout
    assert parquet_bursts(tmp_path / "out") == offline_bursts(batches)
    assert shipping.is_local_master("local[*]")
