"""What the running Spark can do: the one place that knows how PySpark 3.5
to 4.3 differ (docs/deploy.md, "Spark versions").

Every other module asks a named capability here and never compares a
version itself (tests/unit/engine/test_spark_version.py greps the package
for that); every private PySpark API whose presence or signature differs
between lines is called here, with a fallback for the lines without it.

Two versions matter:

- the *session's* (``spark.version``: the JVM's, or the Spark Connect
  server's), which decides what Spark's readers and the Python workers can
  do (a task runs the cluster's pyspark, not the client's);
- the *client's* (``pyspark.__version__``), which decides what the driver's
  own pyspark calls accept (``to_arrow_schema``'s keywords).

On a classic session the two are the same release.

>>> parse_version("3.5.9"), parse_version("4.2.0.dev1"), parse_version("4.1.0-SNAPSHOT")
((3, 5, 9), (4, 2, 0), (4, 1, 0))
>>> has(( 3, 5, 9), "statestore_reader"), has((4, 0, 5), "statestore_reader")
(False, True)
>>> progress_offset("{'logOffset': 0}"), progress_offset('{"logOffset": 0}'), progress_offset("None")
({'logOffset': 0}, {'logOffset': 0}, None)
"""

from __future__ import annotations

import ast
import json
import os
import re
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ConfigError

Version = Tuple[int, int, int]

SUPPORTED = ((3, 5), (4, 3))  # the oldest and newest line sparkwax supports (setup.cfg's range)

# The first release of each capability (the line's .0 unless said). Each
# entry is what the line's public API or Spark's own behaviour offers;
# tests/unit/engine/test_spark_version.py describes every line by these.
SINCE: Dict[str, Version] = {
    # pyspark.sql.types.StructType.fromDDL (before: _parse_datatype_string)
    "from_ddl": (4, 0, 0),
    # Spark's "statestore" data source (state show / check / rescale, read_state)
    "statestore_reader": (4, 0, 0),
    # its change feed (readChangeFeed), read_state(changes=)
    "state_change_feed": (4, 0, 0),
    # transformWithStateInPandas (sparkwax does not use it yet)
    "transform_with_state": (4, 0, 0),
    # StreamExecution.getLatestExecutionContext (before: currentBatchId), a JVM API
    "execution_context": (4, 0, 0),
    # progress reports carry a no-data micro-batch's observed metrics (3.5
    # reports them only for batches with new data: the per-step metrics of
    # timers fired in a no-data batch are missing from its progress)
    "no_data_batch_metrics": (4, 0, 0),
    # pyspark.sql.conversion.ArrowBatchTransformer, the packed host's pre-packing
    "arrow_batch_transformer": (4, 2, 0),
    # to_arrow_schema(..., timezone=)
    "to_arrow_schema_timezone": (4, 2, 0),
    # StreamingQueryProgress offsets as JSON text (before: Python repr, and "None")
    "json_progress_offsets": (4, 2, 0),
}

# Known Spark bugs by the releases they are in: (first, last) inclusive.
# (apache/spark#58211, the statestore reader's unregistered StateStoreCoordinator,
# is not listed: it was seen on 4.1.4 and 4.2, and its workaround, touching
# spark.streams, is harmless everywhere, so statestore_reader applies it on
# every line.)
BUGS: Dict[str, Tuple[Version, Version]] = {}

# Session confs whose defaults differ between lines, set by sw.local_session
# to 4.x's defaults so a program writes the same files on every line. 3.5
# refuses Parquet timestamps before 1900 by default
# (INCONSISTENT_BEHAVIOR_CROSS_VERSION.WRITE_ANCIENT_DATETIME, default
# EXCEPTION); 4.0 made CORRECTED (proleptic Gregorian, as Python's datetime)
# the default.
ALIKE_CONFS: Dict[str, str] = {
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    "spark.sql.avro.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.avro.datetimeRebaseModeInRead": "CORRECTED",
}

_CACHE: Dict[int, Tuple[Any, Version]] = {}


def parse_version(text: str) -> Version:
    """``"4.2.1"`` (or ``"4.2.0.dev1"``, ``"3.5.2-SNAPSHOT"``) as ``(4, 2, 1)``."""
    found = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if found is None:
        raise ValueError(f"not a Spark version: {text!r}")
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


@lru_cache(maxsize=None)
def client_version() -> Version:
    """The driver's pyspark release (``pyspark.__version__``)."""
    import pyspark

    return parse_version(pyspark.__version__)


def session_version(spark: Any) -> Version:
    """The release ``spark`` runs (``spark.version``: a Spark Connect
    session's is its server's), read once per session."""
    cached = _CACHE.get(id(spark))
    if cached is not None and cached[0] is spark:
        return cached[1]
    try:
        version = parse_version(spark.version)
    except Exception:  # a session that cannot tell: the client's release
        version = client_version()
    _CACHE[id(spark)] = (spark, version)
    return version


def has(version: Version, capability: str) -> bool:
    """Whether Spark ``version`` has ``capability`` (a name of ``SINCE``)."""
    return tuple(version) >= SINCE[capability]


def has_bug(version: Version, bug: str) -> bool:
    """Whether Spark ``version`` has the known bug ``bug`` (a name of ``BUGS``)."""
    first, last = BUGS[bug]
    return first <= tuple(version) <= last


def line(version: Version) -> str:
    """``(4, 2, 1)`` as ``"4.2"``."""
    return f"{version[0]}.{version[1]}"


def supported(version: Version) -> bool:
    """Whether ``version``'s line is one sparkwax supports (3.5 to 4.3)."""
    return SUPPORTED[0] <= (version[0], version[1]) <= SUPPORTED[1]


# -- capabilities of a session ----------------------------------------------

def has_statestore_reader(spark: Any) -> bool:
    return has(session_version(spark), "statestore_reader")


def has_transform_with_state(spark: Any) -> bool:
    return has(session_version(spark), "transform_with_state")


def has_arrow_batch_transformer(spark: Any) -> bool:
    """Whether the Python workers of ``spark`` have ``ArrowBatchTransformer``
    (the packed host pre-packs rows before the shuffle only then)."""
    return has(session_version(spark), "arrow_batch_transformer")


def has_no_data_batch_metrics(spark: Any) -> bool:
    """Whether ``spark``'s progress reports give a no-data micro-batch's
    per-step metrics (4.0+; on 3.5 the timers such a batch fires are not
    counted in the progress)."""
    return has(session_version(spark), "no_data_batch_metrics")


def has_from_ddl() -> bool:
    return has(client_version(), "from_ddl")


def progress_offsets_format(version: Version) -> str:
    """How ``version`` writes a progress report's source offsets:
    ``"json"`` (4.2+) or ``"repr"`` (Python repr text, ``"None"`` for none)."""
    return "json" if has(version, "json_progress_offsets") else "repr"


# -- the calls that differ between lines -------------------------------------

def from_ddl(text: str) -> Any:
    """``StructType.fromDDL(text)`` (4.0+); on 3.5 pyspark's own DDL parser
    (``_parse_datatype_string``, which reads what fromDDL reads), through the
    active session's JVM."""
    from pyspark.sql import types as T

    if has_from_ddl():
        return T.StructType.fromDDL(text)
    return T._parse_datatype_string(text)


def to_arrow_schema(schema: Any, timezone: str = "UTC") -> Any:
    """pyspark's ``to_arrow_schema`` with timestamps in ``timezone``; before
    4.2 it takes no ``timezone`` and writes UTC timestamps (sparkwax asks
    only for UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema as convert

    if has(client_version(), "to_arrow_schema_timezone"):
        return convert(schema, timezone=timezone)
    return convert(schema)


def arrow_batch_transformer() -> Any:
    """``pyspark.sql.conversion.ArrowBatchTransformer`` (4.2+), in a task;
    None where this pyspark has none."""
    try:
        from pyspark.sql.conversion import ArrowBatchTransformer
    except ImportError:
        return None
    return ArrowBatchTransformer


def running_batch_id(execution: Any) -> int:
    """The id of the micro-batch a JVM ``StreamExecution`` runs (or ran
    last). 4.0 moved it into the execution context
    (``getLatestExecutionContext().batchId()``); 3.5 keeps it in
    ``currentBatchId``. The form of the client's line is tried first (on a
    classic session the JVM's line), the other after it."""
    forms = [lambda: execution.getLatestExecutionContext().batchId(),
             lambda: execution.currentBatchId()]
    if not has(client_version(), "execution_context"):
        forms.reverse()
    try:
        return int(forms[0]())
    except Exception:  # py4j: no such method on this JVM
        return int(forms[1]())


def python_includes(sc: Any) -> List[str]:
    """The file names of the job's Python files (``addPyFile``, ``--py-files``:
    the .zip/.egg files Spark puts on its executors' Python path), from
    SparkContext's private ``_python_includes``; where a pyspark has none,
    the names of ``spark.submit.pyFiles``."""
    names = getattr(sc, "_python_includes", None)
    if isinstance(names, list):
        return [str(name) for name in names]
    conf = getattr(sc, "_conf", None) or sc.getConf()
    submitted = str(conf.get("spark.submit.pyFiles", "") or "")
    return [os.path.basename(path) for path in submitted.split(",") if path]


def driver_python_files(sc: Any) -> List[str]:
    """Where the driver holds the job's Python files (``python_includes``):
    under ``SparkFiles.getRootDirectory()``, where ``addPyFile`` and
    ``spark.submit.pyFiles`` put them; those that exist, each once."""
    names = python_includes(sc)
    if not names:
        return []
    from pyspark import SparkFiles

    try:
        root = SparkFiles.getRootDirectory()
    except Exception:  # no SparkContext behind SparkFiles (stopped, or a test's fake)
        return []
    paths = (os.path.join(root, name) for name in dict.fromkeys(names))
    return [path for path in paths if os.path.exists(path)]


def worker_environment(sc: Any) -> Optional[Dict[str, str]]:
    """The environment variables SparkContext gives the Python workers of
    each function created from now on (``sc.environment``: the
    ``spark.executorEnv.*`` confs; pyspark copies it into each function as
    it is created), to change in place; None where ``sc`` has no such dict."""
    environment = getattr(sc, "environment", None)
    return environment if isinstance(environment, dict) else None


def progress_offset(value: Any) -> Any:
    """A source offset of a progress report as a comparable value: Spark 4.2+
    reports JSON text (``'{"logOffset": 0}'``), 4.0/4.1 Python repr text
    (``"{'logOffset': 0}"``) and ``"None"`` for none; anything else is kept
    as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text in ("None", "null", ""):
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def statestore_reader(spark: Any, feature: str, *, changes: bool = False) -> Any:
    """``spark.read.format("statestore")`` for ``feature`` (what the user
    called, for the message), or a ``ConfigError`` naming the Spark version
    it needs where the session's Spark has no such reader (3.5). Touches
    ``spark.streams`` first, on every line (``touch_streams``)."""
    version = session_version(spark)
    needed = "state_change_feed" if changes else "statestore_reader"
    if not has(version, needed):
        raise ConfigError(
            f"{feature} needs Spark {line(SINCE[needed])} or newer (it reads the state "
            f"through Spark's \"statestore\" data source{', its change feed' if changes else ''}); "
            f"this session runs Spark {'.'.join(map(str, version))}, which has none. Run it "
            f"from a PySpark {line(SINCE[needed])}+ environment against a copy of the "
            "checkpoint (the state files are read, never written), or read the step's "
            "output instead")
    touch_streams(spark)  # on every line: apache/spark#58211 (touch_streams)
    return spark.read.format("statestore")


def touch_streams(spark: Any) -> None:
    """Touch ``spark.streams`` (the session's StreamingQueryManager), which
    registers the StateStoreCoordinator the statestore reader asks for
    (apache/spark#58211, fixed by #58258: a session that never touched it
    finds no coordinator; seen on 4.1.4 and 4.2). Harmless where the bug is
    not, so done on every line rather than by a version range. Never raises."""
    try:
        spark.streams  # noqa: B018 (the access is the point)
    except Exception:
        pass


def coordinator_bug(error: BaseException) -> bool:
    """Whether ``error`` is Spark's missing StateStoreCoordinator
    (apache/spark#58211), a Spark bug, not a damaged checkpoint."""
    text = str(error)
    return "StateStoreCoordinator" in text and "RpcEndpointNotFound" in text


def coordinator_message(spark: Any, feature: str) -> str:
    """What to say when ``coordinator_bug``: the Spark bug, and the way out."""
    version = ".".join(map(str, session_version(spark)))
    return (f"{feature}: Spark {version} could not reach its StateStoreCoordinator "
            "(a Spark bug, apache/spark#58211, fixed by apache/spark#58258; the checkpoint "
            "is not at fault). Touch spark.streams on the session before reading state, or "
            "run the state tools from a session that has run a streaming query")


DRIVER_WORKER = "pyspark.sql.streaming.transform_with_state_driver_worker"
_WORKER_LINES = ("Streaming TransformWithStateInPandas Python worker",
                 "Starting Streaming TransformWithStateInPandas Python worker")


def quiet_driver_worker(environ: Optional[Dict[str, str]] = None) -> bool:
    """In pyspark's driver-side transformWithState worker (``DRIVER_WORKER``,
    run as ``__main__`` for a re-keyed or seeded step's state schema check),
    drop the lines its ``main`` prints to stdout (``_WORKER_LINES``: the UDF,
    its return type, the state server's port; the JVM copies them to its
    stderr) by giving the module its own ``print``. Called while the step's
    processor is unpickled, so the worker's first line is out already.
    False elsewhere, with ``$SPARKWAX_VERBOSE`` or Spark's log level at INFO
    or below, or where the worker has no ``main`` to quiet."""
    environ = dict(os.environ) if environ is None else environ
    if environ.get("SPARKWAX_VERBOSE", "").strip() not in ("", "0") or environ.get(
            "SPARKWAX_SPARK_LOG_LEVEL", "").strip().upper() in ("ALL", "TRACE", "DEBUG", "INFO"):
        return False
    import sys

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    named = getattr(spec, "name", None) == DRIVER_WORKER or str(
        getattr(main, "__file__", "")).endswith(DRIVER_WORKER.rsplit(".", 1)[1] + ".py")
    if main is None or not named or not callable(getattr(main, "main", None)):
        return False
    setattr(main, "print", _quiet_print)  # a module global: found before the builtin
    return True


# -- the JVM behind a classic session: PySpark's private py4j handles, here only.
# Each raises (an AttributeError) where there is none (Spark Connect, a stopped
# context): callers keep their own fallback for that, and the one for queries
# returns None.

def classic_context(spark: Any) -> Optional[Any]:
    """A classic session's ``SparkContext`` (``spark._sc``), None for a
    Spark Connect session (it has none).

    >>> classic_context(object()) is None
    True
    """
    return getattr(spark, "_sc", None)


def active_context() -> Optional[Any]:
    """The ``SparkContext`` running in this process, or None (PySpark's
    ``SparkContext._active_spark_context``; None without pyspark too)."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    return SparkContext._active_spark_context


def instantiated_session() -> Optional[Any]:
    """The classic ``SparkSession`` this process made last, active in any
    thread or not (PySpark's ``SparkSession._instantiatedSession``)."""
    from pyspark.sql import SparkSession

    return SparkSession._instantiatedSession


def connect_plan(frame: Any) -> Any:
    """A Spark Connect DataFrame's client-side plan (``frame._plan``)."""
    return frame._plan


def jvm(spark: Any) -> Any:
    """The py4j view of the session's JVM (``sc._jvm``): Java classes by name."""
    return spark.sparkContext._jvm


def java_spark_context(spark: Any) -> Any:
    """The Scala ``SparkContext`` of the session (``sc._jsc.sc()``)."""
    return spark.sparkContext._jsc.sc()


def hadoop_conf(spark: Any) -> Any:
    """A new Hadoop ``Configuration`` from the session's state (its Hadoop
    settings and SQL confs, as Spark's own file reads see them)."""
    return spark._jsparkSession.sessionState().newHadoopConf()


def java_array(spark: Any, java_class: Any, size: int) -> Any:
    """A Java array of ``java_class`` through the session's py4j gateway."""
    return spark.sparkContext._gateway.new_array(java_class, size)


def java_query(query: Any) -> Optional[Any]:
    """The JVM ``StreamingQuery`` of a classic ``StreamingQuery``
    (``_jsq``), or None (Spark Connect's query, another object).

    >>> java_query(object()) is None
    True
    """
    return getattr(query, "_jsq", None)


def logical_plan_text(frame: Any) -> str:
    """The analyzed logical plan of a classic DataFrame, as the JVM prints it
    (``_jdf.queryExecution().logical()``)."""
    return str(frame._jdf.queryExecution().logical().toString())


def _quiet_print(*values: Any, **options: Any) -> None:
    """``print``, but for the driver worker's own progress lines."""
    if values and isinstance(values[0], str) and values[0].startswith(_WORKER_LINES):
        return
    print(*values, **options)


__all__ = ["ALIKE_CONFS", "BUGS", "active_context", "SINCE", "SUPPORTED", "Version", "arrow_batch_transformer", "classic_context", "client_version", "connect_plan",
           "coordinator_bug", "coordinator_message", "driver_python_files", "from_ddl", "has", "has_arrow_batch_transformer",
           "hadoop_conf", "has_bug", "instantiated_session", "has_from_ddl", "has_no_data_batch_metrics", "has_statestore_reader", "has_transform_with_state", "java_array", "java_query", "java_spark_context", "jvm", "line",
           "logical_plan_text",
           "parse_version", "progress_offset", "quiet_driver_worker", "python_includes", "progress_offsets_format", "running_batch_id", "session_version",
           "statestore_reader", "supported", "to_arrow_schema", "touch_streams", "worker_environment"]
