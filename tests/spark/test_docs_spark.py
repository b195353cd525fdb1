"""Every example of the user guide runs, the Spark ones included."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from docs_blocks import run_blocks  # noqa: E402


def test_guide_all_blocks(spark):
    assert run_blocks("guide.md", spark=True) >= 7


def test_operators_all_blocks(spark):
    assert run_blocks("operators.md", spark=True) >= 31
