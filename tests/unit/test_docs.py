"""The offline examples of the docs run (and their asserts hold)."""

from docs_blocks import run_blocks


def test_guide_offline_blocks():
    assert run_blocks("guide.md", spark=False) >= 4


def test_operators_offline_blocks():
    assert run_blocks("operators.md", spark=False) >= 23


def test_semantics_offline_blocks():
    assert run_blocks("semantics.md", spark=False) >= 6


def test_porting_blocks():
    assert run_blocks("porting.md", spark=False) >= 7
