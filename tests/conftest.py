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

TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

collect_ignore = [] if os.environ.get("SPARKWAX_CONNECT_TESTS") else ["connect"]
