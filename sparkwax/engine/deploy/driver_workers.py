"""The job's Python files on the path of the Python worker Spark starts on
the driver for a re-keyed or seeded step.

An executor's Python worker puts the job's Python files (``addPyFile``,
``--py-files``: sparkwax's zip, the app's modules) on its path: each task
sends their names (pyspark's ``worker_util.setup_spark_files``). A step on
``transformWithStateInPandas`` (a re-keyed or seeded step, 4.0+) also runs
in a Python process on the **driver**, before the query's first micro-batch:
pyspark's ``transform_with_state_driver_worker``, started by the state
schema check through the JVM's ``StreamingPythonRunner``. No names reach
that one: its path is pyspark's own, the ``PYTHONPATH`` of the driver's JVM
and the ``PYTHONPATH`` of the function's environment. It unpickles the
step's function, which names the app's classes by module, so a module that
reached only the executors fails there (``ModuleNotFoundError``).

``share_python_files(spark)`` puts the driver's copies of the job's Python
files (``spark_version.driver_python_files``: under the SparkFiles root) on
that environment's ``PYTHONPATH`` (``spark_version.worker_environment``:
``SparkContext.environment``, which pyspark copies into each function as it
is created), before a step's function is created. Spark gives the
executors' workers the same variable: the driver's paths do not exist on
another machine (Python skips them) and hold the same files on this one;
the executor's own copies come first on its path either way.

>>> class Context:
...     environment = {"PYTHONHASHSEED": "0"}
...     _python_includes = []
>>> share_python_files(type("Session", (), {"_sc": Context()})())
[]
"""

from __future__ import annotations

import logging
import os
from typing import Any, List

from ..spark_version import classic_context, driver_python_files, worker_environment

log = logging.getLogger("sparkwax.shipping")
VARIABLE = "PYTHONPATH"


def share_python_files(spark: Any) -> List[str]:
    """Add the driver's copies of ``spark``'s Python files to the
    ``PYTHONPATH`` of the workers of functions created from now on; return
    the paths added now (none for Spark Connect, nothing shipped, or
    nothing new)."""
    sc = classic_context(spark)
    if sc is None:
        return []
    environment = worker_environment(sc)
    paths = driver_python_files(sc)
    if environment is None or not paths:
        return []
    current = [part for part in str(environment.get(VARIABLE, "")).split(os.pathsep) if part]
    added = [path for path in paths if path not in current]
    if added:
        environment[VARIABLE] = os.pathsep.join(current + added)
        log.info("the driver's Python workers import the job's Python files from %s",
                 ", ".join(added))
    return added


__all__ = ["VARIABLE", "share_python_files"]
