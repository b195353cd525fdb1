"""Spark's own log level, from the driver JVM's first line on.

``SparkContext.setLogLevel`` acts once the context is up, after the start-up
lines; spark-submit runs an app at INFO (~100 lines before the first
batch). ``java_option(level)`` names a log4j2 configuration (Spark's
defaults, root at ``level``, a few start-up warnings that say nothing about
the app at ERROR) for ``spark.driver.defaultJavaOptions``: ``sparkwax
submit`` and ``sw.local_session`` pass it, so the driver logs at WARN by
default, without the Java stack traces of logged errors (``--verbose`` /
``$SPARKWAX_VERBOSE``: with them). ``sparkwax submit --spark-log-level INFO`` or
``local_session(log_level="INFO")`` brings INFO back; submit hands its
level to the app's ``local_session`` through ``$SPARKWAX_SPARK_LOG_LEVEL``.
Warnings that say nothing is wrong (``BENIGN``: two the state store logs
once per partition at every ``read_state``, ``state show|check`` and
restart, the scheduler's "Failed to cancel job group ... Cannot find
active jobs for it" at every stop of an idle query, the transformWithState
state server's "No more data to read from the socket" at every start of a
re-keyed or seeded step, and the hostname's loopback address) are filtered
out at WARN, by their logger and text only; the ``--verbose``
configuration (and INFO) keeps them. The lines pyspark's driver-side
transformWithState worker prints are dropped in that worker
(``spark_version.quiet_driver_worker``), unless ``$SPARKWAX_VERBOSE``.

>>> spark_log_level("info"), spark_log_level(None, {"SPARKWAX_SPARK_LOG_LEVEL": "error"})
('INFO', 'ERROR')
>>> spark_log_level(None, {})
'WARN'
>>> java_option("WARN").startswith("-Dlog4j2.configurationFile=")
True
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

from ...errors import ConfigError
from ..deploy.zips import cache_dir

ENV_KEY = "SPARKWAX_SPARK_LOG_LEVEL"
DEFAULT = "WARN"
LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")
CONF_KEY = "spark.driver.defaultJavaOptions"
_QUIET = {  # start-up warnings about this machine, not the app: ERROR unless INFO is asked
    "native": "org.apache.hadoop.util.NativeCodeLoader",
    "adaptive": "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
    "adaptive3": "org.apache.spark.sql.execution.streaming.ResolveWriteToStream",  # Spark 3
    "microbatch": "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "microbatch3": "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
}  # MicroBatchExecution warns "Disabling AQE" for every stateful query; its errors still show
STATE_PACKAGE = "org.apache.spark.sql.execution.streaming.state"  # Spark 3.5 and 4.x
BENIGN = {  # logger (its name and below) -> messages that say nothing is wrong
    STATE_PACKAGE: (  # once per state partition at every read_state, state check, restart
        "doesn't exist in loadedMaps",  # a version loaded from its files: "normal", Spark says
        "StateStoreCoordinator endpoint not available",  # a store opened outside a query
    ),  # on the package: the provider's own logger names carry the store id
    "org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker": (
        # with the plan, at the start of a query of several sparkwax steps, which turn
        # off the check it names (sparkwax.engine.planning.following)
        "Detected pattern of possible 'correctness' issue",
    ),
    "org.apache.spark.scheduler.DAGScheduler": (  # twice at every stop of an idle query
        "Cannot find active jobs for it",  # "Failed to cancel job group ...": nothing to cancel
    ),
    "org.apache.spark.sql.execution.python": (  # the TWS state server (4.0's name and 4.3's)
        # at every start of a re-keyed or seeded step: pyspark's driver-side worker
        # (the state schema check) ends without closing its handle
        "No more data to read from the socket",
    ),
    "org.apache.spark.util.Utils": (  # at the JVM's start, about this machine
        "resolves to a loopback address", "Set SPARK_LOCAL_IP if you need",
    ),
}  # plain words (no regex or .properties escapes)
_TEMPLATE = """\
# written by sparkwax (sparkwax/engine/session/log_levels.py): Spark's defaults, root at {level}
rootLogger.level = {level}
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n{traces}
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
"""


def spark_log_level(level: Optional[str], environ: Optional[Mapping[str, str]] = None) -> str:
    """``level``, else ``$SPARKWAX_SPARK_LOG_LEVEL``, else WARN; upper case, checked."""
    environ = os.environ if environ is None else environ
    chosen = (level or environ.get(ENV_KEY) or DEFAULT).strip().upper()
    if chosen == "WARNING":
        chosen = "WARN"
    if chosen not in LEVELS:
        raise ConfigError(f"Spark log level must be one of {', '.join(LEVELS)}, got {level!r}")
    return chosen


def config_file(level: str, traces: bool = False) -> str:
    """A log4j2 properties file with the root logger at ``level``. Unless
    ``traces`` or ``level`` is INFO or lower, a log line's Java exception is
    left out (``%ex{none}``): a failed task would print its multi-KB trace
    three or four times (executor, task set, writer, query), and the app's
    short block (``sparkwax._ops.failure``) says what failed."""
    level = spark_log_level(level)
    full = traces or LEVELS.index(level) < LEVELS.index("WARN")
    text = _TEMPLATE.format(level=level.lower(), traces="%ex" if full else "%ex{none}")
    quiet = dict(_QUIET) if LEVELS.index(level) >= LEVELS.index("WARN") else {}
    if not full:  # its "Lost task" warning carries the worker's whole traceback as text
        quiet["tasks"] = "org.apache.spark.scheduler.TaskSetManager"
    quiet_level = "error" if LEVELS.index(level) <= LEVELS.index("ERROR") else level.lower()
    if quiet:
        for name, logger in quiet.items():
            text += f"logger.{name}.name = {logger}\nlogger.{name}.level = {quiet_level}\n"
    if not full:
        text += benign_filters(level)
    path = os.path.join(cache_dir(), f"log4j2-{level.lower()}{'-traces' if full else ''}"
                                     f".properties")
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return path
    except OSError:
        pass
    staging = f"{path}.{os.getpid()}.tmp"
    with open(staging, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(staging, path)
    return path


def benign_filters(level: str) -> str:
    """log4j2 lines that drop the known-benign warnings (``BENIGN``,
    matched on the message) and nothing else: each logger at ``level``
    with one deny filter (a log4j2 logger takes one filter element).

    >>> print(benign_filters("WARN").splitlines()[3][:65])
    logger.benign0.filter.benign.regex = (?s).*(doesn't exist in load
    """
    text = ""
    for number, (logger, phrases) in enumerate(BENIGN.items()):
        name = f"logger.benign{number}"
        text += (f"{name}.name = {logger}\n{name}.level = {level.lower()}\n"
                 f"{name}.filter.benign.type = RegexFilter\n"
                 f"{name}.filter.benign.regex = (?s).*({'|'.join(phrases)}).*\n"
                 f"{name}.filter.benign.onMatch = DENY\n"
                 f"{name}.filter.benign.onMismatch = NEUTRAL\n")
    return text


def java_option(level: str, traces: Optional[bool] = None) -> str:
    """The driver JVM option that loads ``config_file(level, traces)``
    (``traces`` default: ``$SPARKWAX_VERBOSE`` is set)."""
    if traces is None:
        traces = os.environ.get("SPARKWAX_VERBOSE", "").strip() not in ("", "0")
    return f"-Dlog4j2.configurationFile=file:{config_file(level, traces)}"


__all__ = ["BENIGN", "CONF_KEY", "ENV_KEY", "benign_filters", "config_file", "java_option",
           "spark_log_level"]
