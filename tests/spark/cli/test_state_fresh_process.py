"""``sparkwax state show`` works from a fresh process, on every line with a
state reader (4.0+), where its session has run no streaming query; ``state
check``, ``sw.read_state`` and ``state clear`` on the same checkpoint here.

A fresh session is where apache/spark#58211 bites (the statestore reader
finds no StateStoreCoordinator until ``spark.streams`` is touched): seen on
4.1.4 and 4.2 (issue 51), worked around on every line because the
workaround is harmless. A reader on the suite's shared session cannot see
it: that session has run streaming queries. Every reader goes through the
one ``spark_version.statestore_reader``, so one fresh process (a JVM: about
20 s a line) stands for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import sparkwax as sw
from sparkwax.engine.spark_version import has_statestore_reader
from sparkwax.testing import Batch, run

from kit import REPO

sys.path.insert(0, str(REPO / "examples"))
import growing_app  # noqa: E402  (examples/ is not a package)
from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(growing_app)  # workers cannot import examples/

pytestmark = [pytest.mark.spark, pytest.mark.lines(since="4.0")]

CLI = [sys.executable, "-c", "import sys; from sparkwax.cli import main; sys.exit(main())"]
T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _events():
    return [[("u1", {"ts": T0, "amount": 5}), ("u2", {"ts": T0, "amount": 3})],
            [("u1", {"ts": T0 + timedelta(seconds=30), "amount": 2}),
             ("u3", {"ts": T0 + timedelta(seconds=40), "amount": 1})]]


def _run(args, **options):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "examples")])}
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=env, **options)


def test_state_show_works_from_a_fresh_process(spark, tmp_path):
    """One host (per key: the readers' packed paths are tested in process)."""
    host = "per_key"
    if not has_statestore_reader(spark):
        pytest.skip("no statestore reader on this line (3.5): test_rescale's refusals")
    source = tmp_path / "in"
    source.mkdir()
    batches = _events()
    for number, items in enumerate(batches):
        path = source / f"part-{number:03d}.json"
        path.write_text("".join(json.dumps({"user": k, "ts": v["ts"].isoformat(),
                                            "amount": v["amount"]}) + "\n" for k, v in items))
        os.utime(path, (1_700_000_000 + number,) * 2)
    checkpoint = str(tmp_path / "ck")
    sw.start(growing_app.build(spark, str(source), host), checkpoint=checkpoint,
             path=str(tmp_path / "out"), trigger={"availableNow": True}).awaitTermination()
    held = sorted(run(growing_app.Totals, [Batch(items) for items in batches],
                      time=growing_app.TIME).snapshots)
    assert held, "the offline run holds state: the comparison means something"

    shown = _run([*CLI, "state", "show", checkpoint, "--json"])
    assert shown.returncode == 0, shown.stderr[-3000:]
    keys = sorted(json.loads(line)["key"] for line in shown.stdout.splitlines()
                  if line.startswith("{") and '"key"' in line)
    assert keys == held, shown.stdout[-3000:]

    from sparkwax.cli import main

    assert main(["state", "check", checkpoint, f"{REPO}/examples/growing_app.py:TotalsV2"]) == 0
    assert sorted(str(row["user"]) for row in sw.read_state(spark, checkpoint).collect()) == held
    assert main(["state", "clear", checkpoint, "--yes", "--force"]) == 0  # (no log-age wait)
    assert not os.path.exists(os.path.join(checkpoint, "offsets"))
