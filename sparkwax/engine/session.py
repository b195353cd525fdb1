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

_HADOOP_PREFIX = "spark.hadoop."
STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


def local_session(master: Optional[str] = None, *, app_name: str = "sparkwax",
                  shuffle_partitions: Optional[int] = None, state_store: Optional[str] = None,
                  log_level: str = "ERROR", conf: Optional[Dict[str, str]] = None,
                  remote: Optional[str] = None):
    """Get or create a SparkSession: ``shuffle.partitions`` = cores (Spark's
    200 costs ~20 s per micro-batch on 2 cores), UI off, Arrow on, UTC session
    time zone, workers on this interpreter, quiet logs. ``state_store`` is
    ``"hdfs"`` (Spark's default) or ``"rocksdb"`` (with changelog
    checkpointing). ``conf`` entries win over these defaults.

    ``master`` defaults to ``local[*]``, or, in a script launched by
    ``spark-submit`` (or ``sparkwax submit``), to spark-submit's ``--master``;
    there the submitted ``--conf`` values also win over these defaults (the
    arguments of this function still win over both).

    ``remote="sc://host:15002"`` (or ``$SPARK_REMOTE``) returns a Spark
    Connect session instead, with the session-level defaults (Arrow, UTC,
    shuffle partitions = the server's local[N] cores or its
    ``spark.cores.max``; a cluster's own setting is kept otherwise), and
    sparkwax is shipped to the server as an artifact when a step is planned.
    """
    from pyspark.sql import SparkSession

    if remote is None and master is None and os.environ.get("SPARK_REMOTE") \
            and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        remote = os.environ["SPARK_REMOTE"]
    if remote is not None:
        return connect_session(remote, app_name=app_name,
                               shuffle_partitions=shuffle_partitions,
                               state_store=state_store, conf=conf)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    submitted = _submitted_conf()
    if master is None and submitted is None:
        master = "local[*]"
    cores = _cores(master or (submitted or {}).get("spark.master", "local[*]"), submitted or {})
    settings = {
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR",
    }
    if submitted is not None:  # spark-submit's --conf values win over the defaults above
        settings = {name: value for name, value in settings.items() if name not in submitted}
    if shuffle_partitions:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if state_store is not None:
        settings.update(_store_settings(state_store))
    settings.update(conf or {})
    builder = SparkSession.builder
    if submitted is None or "spark.app.name" not in submitted:
        builder = builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    for name, value in settings.items():  # a running session ignores new spark.hadoop.*
        if name.startswith(_HADOOP_PREFIX):  # confs; Hadoop's own key applies per session
            spark.conf.set(name[len(_HADOOP_PREFIX):], value)
    spark.sparkContext.setLogLevel(log_level)
    return spark


def connect_session(remote: str, *, app_name: str = "sparkwax",
                    shuffle_partitions: Optional[int] = None,
                    state_store: Optional[str] = None, conf: Optional[Dict[str, str]] = None):
    """A Spark Connect session to ``remote`` with sparkwax's session defaults.
    Static settings (UI, driver options) belong to the server and are left alone."""
    from pyspark.sql import SparkSession

    try:
        import pyspark.sql.connect.session  # noqa: F401  (the client's dependencies)
    except ImportError as error:
        raise ConfigError(f"Spark Connect needs the client's dependencies "
                          f"(pip install 'sparkwax[connect]'): {error}") from error
    try:  # pyspark's own entry: it also puts this process in Connect mode
        spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    except Exception as error:
        if "SparkContext" not in str(error) and "regular Spark" not in str(error):
            raise
        raise ConfigError(f"cannot connect to {remote}: this process already runs a classic "
                          f"SparkSession, and pyspark runs one kind per process "
                          f"({error})") from error
    settings = {"spark.sql.execution.arrow.pyspark.enabled": "true",
                "spark.sql.session.timeZone": "UTC"}
    cores = shuffle_partitions or _server_cores(spark)
    if cores:
        settings["spark.sql.shuffle.partitions"] = str(cores)
    if state_store is not None:
        settings.update(_store_settings(state_store))
    settings.update(conf or {})
    for name, value in settings.items():
        try:
            spark.conf.set(name, value)
        except Exception as error:
            raise ConfigError(f"the Spark Connect server at {remote} refused {name}={value!r} "
                              f"(set it when starting the server): {error}") from error
    return spark


def _server_cores(spark) -> Optional[int]:
    """Task slots of a Connect server: N of its local[N] master or its
    spark.cores.max; None when unknown (the server's own setting stays)."""
    def conf(name):
        try:
            return spark.conf.get(name, "") or ""
        except Exception:  # a server that hides its static confs
            return ""

    master = conf("spark.master")
    if master.startswith("local"):
        return _local_cores(master)
    cores = conf("spark.cores.max")
    return int(cores) if cores.isdigit() else None


def _store_settings(state_store: str) -> Dict[str, str]:
    if state_store not in STATE_STORES:
        raise ConfigError(f"state_store must be one of {sorted(STATE_STORES)}, "
                          f"got {state_store!r}")
    settings = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES[state_store]}
    if state_store == "rocksdb":
        settings["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] = "true"
    return settings


def _submitted_conf() -> Optional[Dict[str, str]]:
    """spark-submit's configuration when this script runs under it (its JVM
    is already up and hands the gateway to Python), else None."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def _cores(master: str, submitted: Dict[str, str]) -> int:
    """Task slots to size partitions by: N of local[N], else the submitted
    spark.cores.max or executor instances x cores, else this machine's cores."""
    local = _local_cores(master)
    if local:
        return local
    if submitted.get("spark.cores.max", "").isdigit():
        return int(submitted["spark.cores.max"])
    instances = submitted.get("spark.executor.instances", "")
    per_executor = submitted.get("spark.executor.cores", "")
    if instances.isdigit() and per_executor.isdigit():
        return int(instances) * int(per_executor)
    return os.cpu_count() or 2


def _local_cores(master: str) -> Optional[int]:
    """N of ``local[N]`` (or ``local[N,F]``), else None."""
    if master.startswith("local[") and master.endswith("]"):
        inside = master[len("local["):-1].split(",")[0]
        if inside.isdigit():
            return int(inside)
    return None
