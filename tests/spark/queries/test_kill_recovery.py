"""Exactly-once state and output through SIGKILL of the driver, on both state
stores and both hosts (HDFS-backed with the per-key host on local paths,
RocksDB with the packed host with input, output and checkpoint on a ViewFS
mount, which only Spark's file system can open).

The job (examples/recovery_app.py) runs in its own process group; it is killed
with SIGKILL at randomly chosen micro-batches, restarted on the same checkpoint,
and the final output rows and final state must equal the offline runner's over
the micro-batches Spark ran."""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.engine.spark_version import has_statestore_reader
from sparkwax.testing import Batch, run
from sparkwax.testing.reference import Accumulator

from kit import IN_TIER, REPO, T0 as BASE, batches_spark_ran, run_with_kills

pytestmark = pytest.mark.lines(pool="kill")  # the tier: one kill -9 test per line (tests/tier.py)

APP = REPO / "examples" / "recovery_app.py"
FILES = 10
# the compatibility tier (tests/compat/run.sh, one run per older Spark line) kills once
KILLS = 1 if IN_TIER else 3
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
        batches.append(items)
    return batches


def _table(tmp: Path) -> str:
    return "kill" + hashlib.sha1(str(tmp).encode()).hexdigest()[:8]  # a host name: no "_"


def _mount(tmp: Path) -> dict:
    return {f"spark.hadoop.fs.viewfs.mounttable.{_table(tmp)}.link./data": f"file://{tmp}"}


def _location(tmp: Path, store: str, relative: str) -> str:
    """How the job sees ``tmp/relative``: a local path, or through the ViewFS mount."""
    return f"viewfs://{_table(tmp)}/data/{relative}" if store.endswith("viewfs") \
        else str(tmp / relative)


def _start(tmp: Path, name: str, store: str) -> subprocess.Popen:
    backend, host = store.split("/")[:2]
    confs = [arg for key, value in _mount(tmp).items() for arg in ("--conf", f"{key}={value}")]
    return subprocess.Popen(
        [sys.executable, str(APP), "--input", _location(tmp, store, "in"),
         "--output", _location(tmp, store, f"{name}/out"),
         "--checkpoint", _location(tmp, store, f"{name}/ck"), "--state-store", backend,
         "--host", host, *confs],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)


def _run_with_kills(tmp: Path, name: str, store: str, rng: random.Random) -> list:
    return run_with_kills(lambda: _start(tmp, name, store), tmp / name / "ck",
                          sorted(rng.sample(range(1, FILES - 1), KILLS)), rng)


def _outputs(spark, folder: str) -> Counter:
    return Counter(tuple(row) for row in spark.read.parquet(folder).collect())


def _state(spark, checkpoint: str) -> dict:
    return {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)}


@pytest.mark.slow
@pytest.mark.parametrize("store", ["hdfs/per_key", "rocksdb/packed/viewfs"])
def test_sigkill_restarts_give_exactly_once_state_and_output(spark, tmp_path, store):
    for key, value in _mount(tmp_path).items():  # the shared session reads the state there
        spark.conf.set(key[len("spark.hadoop."):], value)
    rng = random.Random(f"kill-{store.split('/')[0]}")
    files = _make_input(tmp_path / "in", rng)
    killed_after = _run_with_kills(tmp_path, "killed", store, rng)
    assert len(killed_after) == KILLS and killed_after[-1] < FILES + 1
    try:
        # the oracle: the offline runner over the micro-batches Spark ran, as the
        # checkpoint's offset log records them (an uninterrupted twin run adds nothing)
        ran = batches_spark_ran(tmp_path / "killed" / "ck", files)
        assert sum(len(step.items) for step in ran if isinstance(step, Batch)) == \
            sum(len(items) for items in files), "every input row in one batch"
        offline = run(Accumulator, ran, time=TIME)
        outputs = _outputs(spark, _location(tmp_path, store, "killed/out"))
        assert outputs == Counter((key, *value) for key, value in offline.outputs), killed_after
        if has_statestore_reader(spark):  # 3.5: the outputs (running totals) carry the state
            state = _state(spark, _location(tmp_path, store, "killed/ck"))
            assert {k: v[0] for k, v in state.items()} == offline.snapshots, killed_after
    except AssertionError:
        keep = Path(tempfile.mkdtemp(prefix=f"sparkwax-kill-failure-{store.replace('/', '-')}-"))
        shutil.copytree(tmp_path, keep, dirs_exist_ok=True)
        print(f"kept the failing run's folders in {keep}")
        raise
