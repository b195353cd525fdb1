"""Two stateful steps over two keys in one query (examples/regions_app.py:
first visits by user, then counts by region) through SIGKILL of the driver,
on both hosts: the restarted job's output equals the offline ``run_flow``
over the micro-batches Spark ran, nothing lost or counted twice."""

import json
import os
import random
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from sparkwax.testing import Batch

from kit import IN_TIER, REPO, T0, batches_spark_ran, run_with_kills, skip_unless_steps_follow

pytestmark = pytest.mark.lines(since="4.0", pool="kill")  # the tier: one kill -9 test per line

APP = REPO / "examples" / "regions_app.py"
FILES = 8
KILLS = 1 if IN_TIER else 2
sys.path.insert(0, str(REPO / "examples"))
import regions_app  # noqa: E402


def _make_input(folder: Path, rng: random.Random) -> list:
    folder.mkdir()
    batches, clock = [], T0
    for number in range(FILES):
        items = []
        for _ in range(rng.randint(4, 9)):
            clock += timedelta(seconds=rng.randint(1, 240))
            user = rng.choice(["u1", "u2", "u3", "u4", "u5"])
            items.append((user, {"region": {"u1": "eu", "u2": "eu", "u3": "us"}.get(user, "ap"),
                                 "ts": clock - timedelta(seconds=rng.randint(0, 90)),
                                 "page": rng.randint(1, 4)}))
        path = folder / f"part-{number:03d}.json"
        path.write_text("".join(json.dumps({"user": user, "region": v["region"],
                                            "ts": v["ts"].isoformat(), "page": v["page"]}) + "\n"
                                for user, v in items))
        os.utime(path, (1_600_000_000 + number,) * 2)
        batches.append(items)
    return batches


def _start(tmp: Path, host: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(APP), "--input", str(tmp / "in"), "--output", str(tmp / "out"),
         "--checkpoint", str(tmp / "ck"), "--host", host],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_two_steps_restart_after_sigkill_exactly_once(spark, tmp_path, host):
    skip_unless_steps_follow(spark)
    rng = random.Random(f"flow-{host}")
    files = _make_input(tmp_path / "in", rng)
    killed_after = run_with_kills(lambda: _start(tmp_path, host), tmp_path / "ck",
                                  sorted(rng.sample(range(1, FILES - 1), KILLS)), rng)
    assert len(killed_after) == KILLS
    ran = batches_spark_ran(tmp_path / "ck", files)
    assert sum(len(step.items) for step in ran if isinstance(step, Batch)) == \
        sum(len(items) for items in files)
    visits, regions = regions_app.offline(ran)
    assert visits.metrics.timers_fired > 0  # users were forgotten, and came back
    outputs = Counter(tuple(row) for row in spark.read.parquet(str(tmp_path / "out")).collect())
    assert outputs == Counter((key, *value) for key, value in regions.outputs)
