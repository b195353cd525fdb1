"""The embedded default: a local SparkSession tuned for stateful streaming.

>>> spark = local_session()                                  # doctest: +SKIP
>>> spark.conf.get("spark.sql.shuffle.partitions")           # doctest: +SKIP
'2'

Configs frozen into a checkpoint (keep them when restarting a query on the
same checkpoint): ``spark.sql.shuffle.partitions`` (the number of state
partitions), ``spark.sql.streaming.stateStore.providerClass`` (the state
backend), the key and state schemas (the ``key`` argument and sparkwax's
state row) and the output schema of the step.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Optional

from ..errors import ConfigError

STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


def local_session(master: str = "local[*]", *, app_name: str = "sparkwax",
                  shuffle_partitions: Optional[int] = None, state_store: Optional[str] = None,
                  log_level: str = "ERROR", conf: Optional[Dict[str, str]] = None):
    """Get or create a SparkSession: ``shuffle.partitions`` = cores (Spark's
    200 costs ~20 s per micro-batch on 2 cores), UI off, Arrow on, UTC session
    time zone, workers on this interpreter, quiet logs. ``state_store`` is
    ``"hdfs"`` (Spark's default) or ``"rocksdb"`` (with changelog
    checkpointing). ``conf`` entries win over these defaults."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = _cores(master)
    settings = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions or cores),
        "spark.default.parallelism": str(cores),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR",
    }
    if state_store is not None:
        if state_store not in STATE_STORES:
            raise ConfigError(f"state_store must be one of {sorted(STATE_STORES)}, "
                              f"got {state_store!r}")
        settings["spark.sql.streaming.stateStore.providerClass"] = STATE_STORES[state_store]
        if state_store == "rocksdb":
            settings["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] = \
                "true"
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark


def _cores(master: str) -> int:
    if master.startswith("local[") and master.endswith("]"):
        inside = master[len("local["):-1].split(",")[0]
        if inside.isdigit():
            return int(inside)
    return os.cpu_count() or 2
