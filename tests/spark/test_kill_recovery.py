"""Exactly-once state and output through SIGKILL of the driver, on both state
stores and both hosts (HDFS-backed with the per-key host, RocksDB with the
packed host).

The job (examples/recovery_app.py) runs in its own process group; it is killed
with SIGKILL at randomly chosen micro-batches, restarted on the same checkpoint,
and the final output rows and final state must equal an uninterrupted run's
and the offline runner's."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sparkwax.engine.checkpoint import read_entries
from sparkwax.testing import Batch, run
from sparkwax.testing.reference import Accumulator

APP = Path(__file__).resolve().parents[2] / "examples" / "recovery_app.py"
FILES = 14
KILLS = 5
BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)
TIME = __import__("sparkwax").EventTime("ts", watermark="2 minutes")


def _make_input(folder: Path, rng: random.Random):
    folder.mkdir()
    batches, clock = [], BASE
    for number in range(FILES):
        items = []
        for _ in range(rng.randint(3, 8)):
            clock += timedelta(seconds=rng.randint(1, 200))
            items.append((rng.choice("abcdef"), {"ts": clock - timedelta(seconds=rng.randint(0, 60)),
                                                 "value": rng.randint(0, 50)}))
        path = folder / f"part-{number:03d}.json"
        path.write_text("".join(json.dumps({"key": k, "ts": v["ts"].isoformat(),
                                            "value": v["value"]}) + "\n" for k, v in items))
        os.utime(path, (1_600_000_000 + number,) * 2)
        batches.append(Batch(items))
    return batches


def _start(tmp: Path, name: str, store: str) -> subprocess.Popen:
    store, host = store.split("/")
    return subprocess.Popen(
        [sys.executable, str(APP), "--input", str(tmp / "in"), "--output", str(tmp / name / "out"),
         "--checkpoint", str(tmp / name / "ck"), "--state-store", store, "--host", host],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)  # the job's own process group: python + JVM
    process.wait(timeout=60)


def _commits(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return len([n for n in os.listdir(folder) if n.isdigit()]) if folder.is_dir() else 0


def _run_to_end(tmp: Path, name: str, store: str) -> None:
    process = _start(tmp, name, store)
    try:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0 and "done" in output, output[-3000:]
    finally:
        _stop(process)


def _run_with_kills(tmp: Path, name: str, store: str, rng: random.Random) -> list:
    kill_points = sorted(rng.sample(range(1, FILES - 1), KILLS))
    done_at = []
    for point in kill_points:
        process = _start(tmp, name, store)
        try:
            deadline = time.monotonic() + 300
            while _commits(tmp / name / "ck") < point and process.poll() is None:
                assert time.monotonic() < deadline, "the job made no progress"
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.4))  # land somewhere inside the next micro-batch
        finally:
            _stop(process)
        done_at.append(_commits(tmp / name / "ck"))
    _run_to_end(tmp, name, store)
    return done_at


def _outputs(spark, folder: Path) -> Counter:
    return Counter(tuple(row) for row in spark.read.parquet(str(folder)).collect())


def _state(spark, checkpoint: Path) -> dict:
    return {e.key: (e.snapshot, e.timer) for e in read_entries(spark, str(checkpoint))}


@pytest.mark.slow
@pytest.mark.parametrize("store", ["hdfs/per_key", "rocksdb/packed"])
def test_sigkill_restarts_give_exactly_once_state_and_output(spark, tmp_path, store):
    rng = random.Random(f"kill-{store.split('/')[0]}")
    batches = _make_input(tmp_path / "in", rng)
    _run_to_end(tmp_path, "calm", store)
    killed_after = _run_with_kills(tmp_path, "killed", store, rng)
    assert len(killed_after) == KILLS and killed_after[-1] < FILES + 1

    offline = run(Accumulator, batches, time=TIME)
    expected = Counter((key, *value) for key, value in offline.outputs)
    calm, killed = _outputs(spark, tmp_path / "calm" / "out"), _outputs(spark, tmp_path / "killed" / "out")
    try:
        assert calm == expected
        assert killed == calm, (f"killed after commits {killed_after}: extra "
                                f"{sorted((killed - calm).items())} missing "
                                f"{sorted((calm - killed).items())}")
        assert _state(spark, tmp_path / "killed" / "ck") == _state(spark, tmp_path / "calm" / "ck")
        assert {k: v[0] for k, v in _state(spark, tmp_path / "calm" / "ck").items()} == \
            offline.snapshots
    except AssertionError:
        keep = Path(tempfile.mkdtemp(prefix=f"sparkwax-kill-failure-{store.replace('/', '-')}-"))
        shutil.copytree(tmp_path, keep, dirs_exist_ok=True)
        print(f"kept the failing run's folders in {keep}")
        raise
