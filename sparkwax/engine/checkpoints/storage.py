"""Files next to a checkpoint, read and written through Spark's own file systems.

Checkpoints live where Spark writes them: ``hdfs://``, ``s3a://``,
``abfss://``, ``gs://``, ``dbfs:/``, ``viewfs://`` or a plain path (which
Spark resolves against the cluster's default file system, ``fs.defaultFS``,
not necessarily the local disk). sparkwax never opens those paths with
Python's ``os``: every read, listing, write and delete goes through
``storage_for(spark)``:

- a classic session (a JVM in this process): Hadoop's ``FileSystem`` with the
  session's Hadoop configuration (``spark.hadoop.*`` settings included), the
  same one Spark's checkpoint code uses;
- a Spark Connect session (no JVM here): Spark itself, through DataFrame
  reads (``binaryFile``) and writes. A written file is then a folder of the
  same name with one ``part-*`` file (Spark's output form) and a delete is an
  overwrite that leaves a one-line marker, since Connect has no file API.
  Readers accept both forms.

>>> store = storage_for(spark)                                   # doctest: +SKIP
>>> store.write_text("viewfs://cluster/data/ck/notes.json", "{}")  # doctest: +SKIP
>>> store.read_text("viewfs://cluster/data/ck/notes.json")       # doctest: +SKIP
'{}'
>>> print(missing_filesystem_hint("s3a"))
the hadoop-aws jar (and its AWS SDK bundle) matching Spark's Hadoop version, e.g. --packages org.apache.hadoop:hadoop-aws:<hadoop version>
"""

from __future__ import annotations

import re
import time as wall_clock
from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Tuple

from ...errors import ConfigError
from ..deploy.session_confs import is_connect
from ..spark_version import hadoop_conf, java_array, jvm
from .format.paths import join_path, scheme_of

CLEARED_MARKER = "cleared by sparkwax"


def staging_name(name: str, micros: int) -> str:
    """The hidden temporary file ``write_text``/``replace_text`` write
    ``name`` to before renaming it over ``name``.

    >>> staging_name("sparkwax-live.json", 17)
    '.sparkwax-live.json.17.tmp'
    >>> is_staging_of(staging_name("sparkwax-live.json", 17), "sparkwax-live.json")
    True
    """
    return f".{name}.{micros}.tmp"


def is_staging_of(entry: str, name: str) -> bool:
    """Whether folder entry ``entry`` is a temporary file of ``name`` (a
    write of it under way, or one cut short)."""
    return entry.startswith(f".{name}.") and entry.endswith(".tmp")


def staging_micros(entry: str, name: str) -> Optional[int]:
    """When the temporary file ``entry`` of ``name`` was begun (epoch µs of
    its writer's clock, from its name), or None when it is not one.

    >>> staging_micros(".sparkwax-live.json.17.tmp", "sparkwax-live.json")
    17
    >>> staging_micros(".sparkwax-live.json.x.tmp", "sparkwax-live.json") is None
    True
    """
    if not is_staging_of(entry, name):
        return None
    stamp = entry[len(name) + 2:-len(".tmp")]
    return int(stamp) if stamp.isdigit() else None

_HINTS = {
    ("s3", "s3a", "s3n"): "the hadoop-aws jar (and its AWS SDK bundle) matching Spark's "
                          "Hadoop version, e.g. --packages org.apache.hadoop:hadoop-aws:"
                          "<hadoop version>",
    ("abfs", "abfss", "wasb", "wasbs"): "the hadoop-azure jar matching Spark's Hadoop "
                                        "version, e.g. --packages org.apache.hadoop:"
                                        "hadoop-azure:<hadoop version>",
    ("gs",): "the Cloud Storage connector, e.g. --packages "
             "com.google.cloud.bigdataoss:gcs-connector:<version>",
    ("dbfs",): "a Databricks runtime (dbfs:/ exists only on Databricks clusters)",
}
_MISSING = re.compile(r"No FileSystem for scheme\W+(\w+)|ClassNotFoundException:\s*Class "
                      r"(\S+FileSystem) not found")


class Created(NamedTuple):
    """What ``create_new`` did: ``created`` the file (else one was there),
    ``exclusive``ly (no other writer can have created it at the same time)."""

    created: bool
    exclusive: bool


@dataclass(frozen=True)
class FileEntry:
    """One file (or folder) of a listing."""

    name: str
    path: str
    modified_ms: int
    is_dir: bool
    size: int = -1  # bytes (-1 for a folder)


def missing_filesystem_hint(scheme: str) -> str:
    """What a Spark without a file system for ``scheme`` lacks."""
    for schemes, hint in _HINTS.items():
        if scheme.lower() in schemes:
            return hint
    return (f"a Hadoop FileSystem implementation for {scheme!r} on Spark's classpath "
            f"(--jars/--packages) and its fs.{scheme}.impl setting")


def filesystem_error(path: str, error: BaseException) -> Optional[ConfigError]:
    """A ConfigError naming the scheme when ``error`` says Spark has no file
    system for ``path``'s scheme, else None."""
    text = str(error)
    if not _MISSING.search(text) and "UnsupportedFileSystemException" not in text:
        return None
    scheme = scheme_of(path) or "(default)"
    return ConfigError(f"Spark has no file system for scheme {scheme!r} (path {path!r}): "
                       f"add {missing_filesystem_hint(scheme)}")


def storage_for(spark: Any) -> "HadoopStorage | SparkStorage":
    """The storage for ``spark``: Hadoop's FileSystem on a classic session,
    Spark reads and writes on a Connect session."""
    return SparkStorage(spark) if is_connect(spark) else HadoopStorage(spark)


class HadoopStorage:
    """Hadoop ``FileSystem`` calls through the session's JVM."""

    def __init__(self, spark: Any):
        self._spark = spark
        self._java = jvm(spark)
        self._conf = hadoop_conf(spark)
        self._path_class: Any = None  # Hadoop's Path: looked up once (each lookup is ~5 py4j calls)

    def _path(self, *parts: Any) -> Any:
        if self._path_class is None:
            self._path_class = self._java.org.apache.hadoop.fs.Path
        return self._path_class(*parts)

    def _fs(self, path: str) -> Tuple[Any, Any]:
        hadoop_path = self._path(path)
        try:
            return hadoop_path.getFileSystem(self._conf), hadoop_path
        except Exception as error:
            raise filesystem_error(path, error) or ConfigError(
                f"cannot open {path!r} through Spark's file system: {error}") from error

    def exists(self, path: str) -> bool:
        fs, hadoop_path = self._fs(path)
        return bool(fs.exists(hadoop_path))

    def list(self, path: str, hidden: bool = False) -> List[FileEntry]:
        """The visible entries of folder ``path`` (none if it does not exist);
        with ``hidden``, the hidden ones too (``.0.<uuid>.tmp``, ``_metadata``)."""
        fs, hadoop_path = self._fs(path)
        if not fs.exists(hadoop_path):
            return []
        found = []
        for status in fs.listStatus(hadoop_path):
            name = status.getPath().getName()
            if hidden or not name.startswith((".", "_")):
                directory = bool(status.isDirectory())
                found.append(FileEntry(name, status.getPath().toString(),
                                       int(status.getModificationTime()), directory,
                                       -1 if directory else int(status.getLen())))
        return sorted(found, key=lambda entry: entry.name)

    def read_bytes(self, path: str) -> Optional[bytes]:
        """The file's bytes (a Spark output folder: its part files joined), or None."""
        fs, hadoop_path = self._fs(path)
        if not fs.exists(hadoop_path):
            return None
        if fs.getFileStatus(hadoop_path).isDirectory():
            parts = [e.path for e in self.list(path) if e.name.startswith("part-")]
            return b"".join(self._read_file(fs, self._path(p))
                            for p in parts)
        return self._read_file(fs, hadoop_path)

    def _read_file(self, fs: Any, hadoop_path: Any) -> bytes:
        stream = fs.open(hadoop_path)
        try:
            return bytes(self._java.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def read_text(self, path: str) -> Optional[str]:
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8")

    def write_text(self, path: str, text: str) -> None:
        """Write one file (replacing it): to a hidden temporary file, then renamed."""
        fs, hadoop_path = self._fs(path)
        staging = self._staged(fs, hadoop_path, text)
        if fs.exists(hadoop_path):
            fs.delete(hadoop_path, True)
        if not fs.rename(staging, hadoop_path):
            raise ConfigError(f"cannot write {path!r}: renaming {staging.toString()} failed")

    def _staged(self, fs: Any, hadoop_path: Any, text: str) -> Any:
        """``text`` written to a hidden temporary file beside ``hadoop_path``."""
        staging = self._path(hadoop_path.getParent(),
                             staging_name(hadoop_path.getName(), int(wall_clock.time() * 1e6)))
        stream = fs.create(staging, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return staging

    def replace_text(self, path: str, text: str) -> None:
        """Write one file, never half: a temporary file renamed over it with
        Hadoop's ``FileContext.rename(..., OVERWRITE)`` (atomic on HDFS; on
        the local and ViewFS file systems Hadoop deletes the old file first,
        so a reader may find none for a moment while the temporary file
        lies beside it, ``liveness.read_settled``; on object stores a copy
        over the old object). Where that rename is refused, ``write_text``."""
        fs, hadoop_path = self._fs(path)
        staging = self._staged(fs, hadoop_path, text)
        hadoop_fs = self._java.org.apache.hadoop.fs
        try:
            context = hadoop_fs.FileContext.getFileContext(hadoop_path.toUri(), self._conf)
            overwrite = getattr(hadoop_fs, "Options$Rename")
            options = java_array(self._spark, overwrite, 1)
            options[0] = overwrite.OVERWRITE
            context.rename(staging, hadoop_path, options)
        except Exception:  # a file system without FileContext support
            fs.delete(staging, False)
            self.write_text(path, text)

    def create_new(self, path: str, text: str) -> "Created":
        """Write ``path`` only if no file is there (``Created.created``:
        False when one was; it is left as it was). ``Created.exclusive``:
        whether no other writer could have created it too. On the local file
        system a complete temporary file is hard-linked to ``path`` (Hadoop's
        local ``create(overwrite=false)`` checks, then creates; a link is
        refused when the name exists, and shows the whole text at once); on
        HDFS Hadoop's create is exclusive; elsewhere (object stores) Hadoop
        checks, then creates: not exclusive."""
        fs, hadoop_path = self._fs(path)
        scheme = str(fs.getUri().getScheme() or "")
        if scheme == "file":
            linked = self._linked(fs, hadoop_path, text)
            if linked is not None:
                return Created(linked, True)
        try:
            stream = fs.create(hadoop_path, False)
        except Exception:
            if fs.exists(hadoop_path):  # FileAlreadyExistsException, however wrapped
                return Created(False, scheme == "hdfs")
            raise
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return Created(True, scheme == "hdfs")

    def _linked(self, fs: Any, hadoop_path: Any, text: str) -> Optional[bool]:
        """``text`` as ``hadoop_path`` of the local file system through a hard
        link of a temporary file: True when linked, False when the name
        existed, None when this disk takes no hard link."""
        staging = self._staged(fs, hadoop_path, text)
        files = self._java.java.nio.file.Files
        try:
            files.createLink(fs.pathToFile(hadoop_path).toPath(),
                             fs.pathToFile(staging).toPath())
        except Exception as error:
            if "FileAlreadyExistsException" in str(error):
                return False
            return None
        finally:
            fs.delete(staging, False)
        try:  # a linked file has no checksum file: one there is an old file's, and would fail reads
            fs.getRawFileSystem().delete(fs.getChecksumFile(hadoop_path), False)
        except Exception:  # a local file system without checksums (fs.file.impl raw)
            pass
        return True

    def delete(self, path: str) -> None:
        fs, hadoop_path = self._fs(path)
        fs.delete(hadoop_path, True)

    def qualified(self, path: str) -> str:
        """``path`` as Spark names it (``file:/tmp/ck`` for ``/tmp/ck``)."""
        fs, hadoop_path = self._fs(path)
        return str(fs.makeQualified(hadoop_path).toString())

    def rename(self, source: str, target: str) -> None:
        """Move a file within one file system (its folder is made first); a
        ConfigError if the file system refuses (e.g. ``target`` exists)."""
        fs, source_path = self._fs(source)
        _, target_path = self._fs(target)
        fs.mkdirs(target_path.getParent())
        if not fs.rename(source_path, target_path):
            raise ConfigError(f"cannot move {source!r} to {target!r} (does the target exist?)")


class SparkStorage:
    """The same operations through Spark reads and writes (for Spark Connect)."""

    def __init__(self, spark: Any):
        self._spark = spark

    def _rows(self, path: str, content: bool = False) -> Optional[List[Any]]:
        """Rows of the files at ``path``, or None when it does not exist."""
        from pyspark.errors import AnalysisException
        from pyspark.sql import functions as F

        try:
            frame = self._spark.read.format("binaryFile").load(path)
            columns = [F.col("path"), F.unix_millis("modificationTime").alias("modified"),
                       F.col("length")]
            rows: List[Any] = frame.select(*columns, *(["content"] if content else [])).collect()
            return rows
        except AnalysisException as error:
            if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
                return None
            raise filesystem_error(path, error) or error
        except Exception as error:
            raise filesystem_error(path, error) or error

    def exists(self, path: str) -> bool:
        return self._rows(path) is not None

    def list(self, path: str, hidden: bool = False) -> List[FileEntry]:
        """The visible files of folder ``path`` (Spark lists files, not folders,
        and never hidden ones: ``hidden`` changes nothing here)."""
        rows = self._rows(path) or []
        found = [FileEntry(row["path"].rstrip("/").rsplit("/", 1)[-1], row["path"],
                           int(row["modified"]), False, int(row["length"])) for row in rows]
        return sorted(found, key=lambda entry: entry.name)

    def read_bytes(self, path: str) -> Optional[bytes]:
        rows = self._rows(path, content=True)
        if rows is None:
            return None
        if len(rows) == 1 and _same_path(rows[0]["path"], path):
            return bytes(rows[0]["content"])
        parts = sorted((r for r in rows if r["path"].rsplit("/", 1)[-1].startswith("part-")),
                       key=lambda r: r["path"])
        return b"".join(bytes(r["content"]) for r in parts)

    def read_text(self, path: str) -> Optional[str]:
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8")

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` as Spark's output folder ``path`` with one part file."""
        frame = self._spark.createDataFrame([(text.rstrip("\n"),)], "value string")
        try:
            frame.coalesce(1).write.mode("overwrite").text(path)
        except Exception as error:
            raise filesystem_error(path, error) or error

    def replace_text(self, path: str, text: str) -> None:
        """``write_text`` (Spark's overwrite of an output folder)."""
        self.write_text(path, text)

    def create_new(self, path: str, text: str) -> "Created":
        """``write_text`` where no file is: checked, then written (never
        exclusive; no lease is taken over Connect, see ``checkpoints.liveness``)."""
        if self.exists(path):
            return Created(False, False)
        self.write_text(path, text)
        return Created(True, False)

    def qualified(self, path: str) -> str:
        """``path`` as given (Connect qualifies paths on the server)."""
        return path

    def rename(self, source: str, target: str) -> None:
        raise ConfigError(f"cannot move {source!r} over Spark Connect (it has no file API): "
                          "use a classic session")

    def delete(self, path: str) -> None:
        """Replace ``path`` by a folder holding one marker line (Connect has no delete)."""
        moment = wall_clock.strftime("%Y-%m-%dT%H:%M:%SZ", wall_clock.gmtime())
        self.write_text(path, f"{CLEARED_MARKER} at {moment}")


def _same_path(found: str, asked: str) -> bool:
    """Spark qualifies paths (``/x`` -> ``file:/x``): compare their ends."""
    return found.rstrip("/").endswith(asked.rstrip("/").split(":", 1)[-1].lstrip("/"))


__all__ = ["CLEARED_MARKER", "Created", "staging_micros", "FileEntry", "HadoopStorage", "SparkStorage",
           "filesystem_error", "join_path", "missing_filesystem_hint", "scheme_of", "storage_for"]
