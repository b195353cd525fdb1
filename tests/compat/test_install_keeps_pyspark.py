"""``pip install 'sparkwax[spark]'`` (or ``[connect]``) beside a cluster's
pyspark keeps that pyspark and what it runs with (docs/deploy.md, "Spark
versions"): pip, asked in this environment with ``--dry-run``, would install
sparkwax and nothing that replaces pyspark, pyarrow, pandas or numpy. The
compatibility tier runs it in each line's environment (tests/compat/run.sh),
``make test`` in the main one. pip reads the package index (PyPI) for what is
not installed yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lines(every=True)  # pip resolves each extra on its own

REPO = Path(__file__).resolve().parents[2]
KEPT = {"pyspark", "pyarrow", "pandas", "numpy"}


@pytest.mark.parametrize("extra", ["spark", "connect"])
def test_installing_sparkwax_keeps_this_pyspark(tmp_path, extra):
    import pyspark

    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
         "--report", str(report), f"{REPO}[{extra}]"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    installs = {item["metadata"]["name"].lower(): item["metadata"]["version"]
                for item in json.loads(report.read_text())["install"]}
    assert "sparkwax" in installs
    assert not KEPT & set(installs), (
        f"pip would replace {sorted(KEPT & set(installs))} beside pyspark {pyspark.__version__}: "
        f"{installs}")
