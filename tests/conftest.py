"""Spark Connect tests run in their own pytest process: pyspark puts a process
that opens a Connect session in Connect mode for good (``pyspark.sql.functions``
then build Connect columns), so they cannot share a process with the classic
session of tests/spark. ``make test`` runs them second, with
SPARKWAX_CONNECT_TESTS=1."""

import os

collect_ignore = [] if os.environ.get("SPARKWAX_CONNECT_TESTS") else ["connect"]
