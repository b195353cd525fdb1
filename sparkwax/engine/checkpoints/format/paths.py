"""Paths as Spark sees them: URIs (``hdfs://nn/ck``, ``s3a://b/ck``, ``file:/x``)
or plain paths, which Spark resolves against its default file system. Pure
string work, never the local file functions (no pyspark import either).

>>> join_path("hdfs://nn:8020/ck/", "offsets")
'hdfs://nn:8020/ck/offsets'
>>> scheme_of("s3a://bucket/ck"), scheme_of("/data/ck"), scheme_of("C:/data")
('s3a', '', '')
"""

from __future__ import annotations

import re
from typing import Mapping, Optional

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def scheme_of(path: str) -> str:
    """The URI scheme of ``path``, ``""`` for a plain path (or a drive letter)."""
    match = _SCHEME.match(path)
    return match.group(1) if match and len(match.group(1)) > 1 else ""


def join_path(folder: str, name: str) -> str:
    """``folder/name`` for URIs and plain paths alike."""
    return f"{folder.rstrip('/')}/{name}"


def local_folder(path: str, settings: Mapping[str, str], environ: Mapping[str, str]
                 ) -> Optional[str]:
    """The folder ``path`` names on this machine's disk when that is certain
    (a ``file:`` URI, or a plain path while no Hadoop default file system is
    configured), else None: then only Spark can tell.

    >>> local_folder("file:///tmp/ck", {}, {}), local_folder("/tmp/ck", {}, {})
    ('/tmp/ck', '/tmp/ck')
    >>> local_folder("/tmp/ck", {}, {"HADOOP_CONF_DIR": "/etc/hadoop"}) is None
    True
    """
    scheme = scheme_of(path)
    if scheme == "file":
        return re.sub(r"^file:(//(?=/))?", "", path)
    if scheme or "spark.hadoop.fs.defaultFS" in settings:
        return None
    if environ.get("HADOOP_CONF_DIR") or environ.get("YARN_CONF_DIR"):
        return None
    return path


__all__ = ["join_path", "local_folder", "scheme_of"]
