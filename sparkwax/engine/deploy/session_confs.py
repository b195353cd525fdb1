"""What a plan and the state tools read of a session: the state stores
(``STATE_STORES``), the largest snapshot a step may store
(``max_snapshot_bytes``), how a packed step reads prepacked rows
(``packed_unpacker``) and whether it is a Spark Connect session
(``is_connect``). Below the planning, the checkpoints and the queries, which
read it; ``sparkwax.engine.session`` builds the session.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Optional

from ...errors import ConfigError
from ..spark_version import jvm

if TYPE_CHECKING:
    from ..hosts.prepack import Unpacker

DRIVER_MEMORY = "spark.driver.memory"
MAX_SNAPSHOT_CONF = "spark.sparkwax.maxSnapshotBytes"
SNAPSHOT_SHARE = 16  # a snapshot in flight holds ~12x its size of JVM heap (Arrow, rows, store)
_MIN_SNAPSHOT_LIMIT, _MAX_SNAPSHOT_LIMIT = 8 << 20, 1 << 30
STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
PREPACK_CONF = "spark.sparkwax.packed.prepack"
_PREFER_INT_EXT = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"


def parse_bytes(text: str) -> int:
    """Spark's size strings in bytes.

    >>> parse_bytes("1g"), parse_bytes("512m"), parse_bytes("64k"), parse_bytes("1000")
    (1073741824, 536870912, 65536, 1000)
    """
    found = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", str(text).lower())
    if not found:
        raise ConfigError(f"not a size: {text!r} (e.g. '64m', '1g' or a number of bytes)")
    return int(found.group(1)) << (10 * " kmgtp".index(found.group(2) or " "))


def max_snapshot_bytes(spark: Any) -> Optional[int]:
    """The largest encoded snapshot (or packed bucket) a step may store on
    ``spark``: ``spark.sparkwax.maxSnapshotBytes`` when set (``0`` for no
    limit), else a sixteenth of a task's share of the JVM heap that runs it
    (the driver's for a local master, else ``spark.executor.memory`` over
    ``spark.executor.cores``), between 8 MB and 1 GB. A snapshot holds about
    twelve times its size of heap while Spark moves it (Arrow batches, rows,
    the state store), and one larger than the heap kills a local session."""
    def conf(name: str) -> str:
        try:
            return spark.conf.get(name, "") or ""
        except Exception:  # a Connect server that hides a static conf
            return ""

    configured = conf(MAX_SNAPSHOT_CONF)
    if configured:
        limit = parse_bytes(configured)
        return limit or None
    master = conf("spark.master")
    if master.startswith("local"):
        heap = _jvm_heap(spark) or parse_bytes(conf(DRIVER_MEMORY) or "1g")
        slots = local_cores(master) or os.cpu_count() or 1
    else:
        heap = parse_bytes(conf("spark.executor.memory") or "1g")
        cores = conf("spark.executor.cores")
        slots = int(cores) if cores.isdigit() and int(cores) > 0 else 1
    return max(_MIN_SNAPSHOT_LIMIT, min(_MAX_SNAPSHOT_LIMIT, heap // (SNAPSHOT_SHARE * slots)))


def _jvm_heap(spark: Any) -> Optional[int]:
    try:
        return int(jvm(spark).java.lang.Runtime.getRuntime().maxMemory())
    except Exception:  # Spark Connect: no JVM here
        return None


def local_cores(master: str) -> Optional[int]:
    """N of ``local[N]`` (or ``local[N,F]``), else None."""
    if master.startswith("local[") and master.endswith("]"):
        inside = master[len("local["):-1].split(",")[0]
        if inside.isdigit():
            return int(inside)
    return None


def packed_unpacker(spark: Any) -> Optional[Unpacker]:
    """How a packed step on ``spark`` reads rows packed before the shuffle
    (``prepack.Unpacker``, with the session's time zone and pandas integer
    conf, as pyspark converts a group), or None: ``spark.sparkwax.packed.prepack``
    is ``false``, or the session's Spark has no ``ArrowBatchTransformer``
    for its workers (before 4.2: ``spark_version``), and the rows cross the
    shuffle one by one."""
    from ..hosts.prepack import Unpacker
    from ..spark_version import has_arrow_batch_transformer

    def conf(name: str, default: str) -> str:
        try:
            return spark.conf.get(name, default) or default
        except Exception:  # a Connect server that hides a conf
            return default

    if conf(PREPACK_CONF, "true").strip().lower() == "false":
        return None
    if not has_arrow_batch_transformer(spark):
        return None
    return Unpacker(conf("spark.sql.session.timeZone", "UTC"),
                    conf(_PREFER_INT_EXT, "false").strip().lower() == "true")


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
