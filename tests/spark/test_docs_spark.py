"""Every example of the user guide runs, the Spark ones included."""

from docs_blocks import run_blocks


def test_guide_all_blocks(spark):
    assert run_blocks("guide.md", spark=True) >= 7


def test_operators_all_blocks(spark):
    assert run_blocks("operators.md", spark=True) >= 31
