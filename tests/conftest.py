"""Spark Connect tests run in their own pytest process: pyspark puts a process
that opens a Connect session in Connect mode for good (``pyspark.sql.functions``
then build Connect columns), so they cannot share a process with the classic
session of tests/spark. ``make test`` runs them second, with
SPARKWAX_CONNECT_TESTS=1.

tests/ is put on sys.path here (not by each file) so that every test file, at
any depth, imports the shared helpers as ``import kit``, ``from cross_host
import ...``, ``from spark_confs import confs``."""

import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

collect_ignore = [] if os.environ.get("SPARKWAX_CONNECT_TESTS") else ["connect"]


@pytest.hookimpl(tryfirst=True)  # before -k and -m: `run.sh LINE -k kill` runs the tier's own
def pytest_collection_modifyitems(config, items):
    """In the compatibility tier (tests/compat/run.sh sets
    SPARKWAX_COMPAT_LINE), the older lines take turns at a `lines` test's
    cases (tests/tier.py)."""
    line = os.environ.get("SPARKWAX_COMPAT_LINE")
    if not line:
        return
    import tier

    kept, dropped = tier.select(items, line)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
