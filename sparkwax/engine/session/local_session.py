"""The embedded default: a local SparkSession tuned for stateful streaming.

>>> spark = local_session()                                  # doctest: +SKIP
>>> spark.conf.get("spark.sql.shuffle.partitions")           # doctest: +SKIP
'2'

Memory: a new local session's driver (where ``local[N]`` runs every task and
the whole state store) gets a quarter of this machine's memory, between 1 GB
(Spark's own default) and 8 GB, unless ``spark.driver.memory`` is set
(``conf={"spark.driver.memory": "12g"}``, spark-submit's ``--driver-memory``,
``$SPARK_DRIVER_MEMORY`` or spark-defaults.conf); the choice is logged on the
``sparkwax`` logger and readable as ``spark.conf.get("spark.driver.memory")``.
A snapshot too large for that memory fails its step with a ``SnapshotError``
naming the key and the size (``deploy.session_confs.max_snapshot_bytes``).

Configs frozen into a checkpoint (keep them when restarting a query on the
same checkpoint): ``spark.sql.shuffle.partitions`` (the number of state
partitions), ``spark.sql.streaming.stateStore.providerClass`` (the state
backend), the key and state schemas (the ``key`` argument and sparkwax's
state row) and the output schema of the step.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Dict, Optional

from ...errors import ConfigError
from ..deploy.session_confs import DRIVER_MEMORY, STATE_STORES, local_cores
from ..spark_version import ALIKE_CONFS, active_context

_HADOOP_PREFIX = "spark.hadoop."
_LOG = logging.getLogger("sparkwax")
MEMORY_SHARE, MIN_MEMORY, MAX_MEMORY = 0.25, 1 << 30, 8 << 30


def local_session(master: Optional[str] = None, *, app_name: str = "sparkwax",
                  shuffle_partitions: Optional[int] = None, state_store: Optional[str] = None,
                  log_level: Optional[str] = None, conf: Optional[Dict[str, str]] = None,
                  remote: Optional[str] = None) -> Any:
    """Get or create a SparkSession: ``shuffle.partitions`` = cores (Spark's
    200 costs ~20 s per micro-batch on 2 cores), UI off, Arrow on, UTC session
    time zone, workers on this interpreter, Spark's logs at ``log_level``
    (default WARN, or ``$SPARKWAX_SPARK_LOG_LEVEL``; ``"INFO"`` for Spark's
    start-up lines too: from the JVM's start for a new local session,
    ``sparkwax.engine.session.log_levels``), a failure printed as one short block
    (``sparkwax._ops.failure``), and (for a new local
    session, unless set) driver memory sized from the machine: a quarter of
    its memory, 1 to 8 GB (``conf={"spark.driver.memory": "12g"}`` to
    change it), and its queries and itself stopped in order when the program
    ends without ``spark.stop()`` (``sparkwax.engine.session.ending``).
    ``state_store`` is
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

    from ..._ops.failure import install_hook
    from .ending import stop_at_exit
    from .interrupts import quiet_interrupts
    from .log_levels import CONF_KEY as LOG_CONF, java_option, spark_log_level

    install_hook()
    level = spark_log_level(log_level)
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
        LOG_CONF: java_option(level),
        **ALIKE_CONFS,  # 4.x's defaults on every line (spark_version)
    }
    if submitted is not None:  # spark-submit's --conf values win over the defaults above
        settings = {name: value for name, value in settings.items() if name not in submitted}
    if shuffle_partitions:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if state_store is not None:
        settings.update(_store_settings(state_store))
    settings.update(conf or {})
    if submitted is None and (master or "").startswith("local"):
        sized = _sized_driver_memory(settings)
        if sized is not None:
            settings[DRIVER_MEMORY] = sized
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
    spark.sparkContext.setLogLevel(level)
    quiet_interrupts(spark)  # Ctrl-C: one line, not py4j's tracebacks
    stop_at_exit()  # a program that returns without spark.stop(): stopped in order
    return spark


def machine_memory_bytes() -> Optional[int]:
    """This machine's memory, or its container's limit when smaller (cgroups)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 0
    for limit_file in ("/sys/fs/cgroup/memory.max",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as handle:
                text = handle.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < (total or 1 << 62):
            total = int(text)
    return total or None


def driver_memory_for(total: Optional[int]) -> str:
    """The driver memory for a machine of ``total`` bytes: a quarter of it,
    between 1 GB and 8 GB, in MB (Spark's ``"<n>m"``).

    >>> driver_memory_for(23 << 30), driver_memory_for(2 << 30), driver_memory_for(None)
    ('5888m', '1024m', '1024m')
    >>> driver_memory_for(64 << 30)
    '8192m'
    """
    wanted = int((total or 0) * MEMORY_SHARE)
    return f"{max(MIN_MEMORY, min(MAX_MEMORY, wanted)) >> 20}m"


def _sized_driver_memory(settings: Dict[str, str]) -> Optional[str]:
    """Driver memory for a new local session, or None where the user set it
    (or a JVM already runs: its memory is fixed)."""
    if DRIVER_MEMORY in settings or os.environ.get("SPARK_DRIVER_MEMORY") \
            or "--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") \
            or active_context() is not None or _in_spark_defaults():
        return None
    total = machine_memory_bytes()
    sized = driver_memory_for(total)
    _LOG.info("sparkwax: driver memory %s (a quarter of this machine's %.1f GB, 1 to 8 GB); "
              "set it with local_session(conf={'spark.driver.memory': '12g'})", sized,
              (total or 0) / (1 << 30))
    return sized


def _in_spark_defaults() -> bool:
    """Whether spark-defaults.conf (which Spark reads at launch) sets driver memory."""
    folder = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    if not folder:
        return False
    try:
        with open(os.path.join(folder, "spark-defaults.conf")) as handle:
            return any(line.split()[:1] == [DRIVER_MEMORY] for line in handle)
    except OSError:
        return False


def connect_session(remote: str, *, app_name: str = "sparkwax",
                    shuffle_partitions: Optional[int] = None,
                    state_store: Optional[str] = None, conf: Optional[Dict[str, str]] = None
                    ) -> Any:
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


def _server_cores(spark: Any) -> Optional[int]:
    """Task slots of a Connect server: N of its local[N] master or its
    spark.cores.max; None when unknown (the server's own setting stays)."""
    def conf(name: str) -> str:
        try:
            return spark.conf.get(name, "") or ""
        except Exception:  # a server that hides its static confs
            return ""

    master = conf("spark.master")
    if master.startswith("local"):
        return local_cores(master)
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
    local = local_cores(master)
    if local:
        return local
    if submitted.get("spark.cores.max", "").isdigit():
        return int(submitted["spark.cores.max"])
    instances = submitted.get("spark.executor.instances", "")
    per_executor = submitted.get("spark.executor.cores", "")
    if instances.isdigit() and per_executor.isdigit():
        return int(instances) * int(per_executor)
    return os.cpu_count() or 2


