"""A logic class defined in a script's __main__ runs on Spark (own process, own JVM)."""

import json
import subprocess
import sys

import pytest

from kit import REPO

EXAMPLE = REPO / "examples" / "main_logic.py"


@pytest.mark.spark   # the example starts its own Spark
def test_main_logic_example_runs_on_spark():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert rows == [["a", 1, 1], ["a", 2, 3], ["a", 3, 6], ["b", 1, 10], ["b", 2, 30]]
