"""The snapshot codec: what a key's state looks like in the state store.

A blob is a 5-byte header followed by a pickle (protocol 5)::

    b"SWX"  format version (1 byte)  serializer (b"P" pickle | b"C" cloudpickle)

cloudpickle is used only when plain pickle cannot serialise the snapshot
(for example a class defined in ``__main__`` on a Spark worker, or a lambda);
its blobs are larger and slower, so prefer snapshots of plain data.

>>> blob = encode({"n": 3}, step_id="s", key="k")
>>> blob[:5], decode(blob, step_id="s", key="k")
(b'SWX\\x01P', {'n': 3})
>>> decode(b"garbage", step_id="s", key="k")
Traceback (most recent call last):
...
sparkwax.errors.SnapshotError: step 's', key 'k', decode: not a sparkwax snapshot: bad header (got b'garbage')
"""

from __future__ import annotations

import pickle
from types import ModuleType
from typing import NamedTuple

from .errors import SnapshotError, short_repr

MAGIC = b"SWX"
FORMAT_VERSION = 1
PICKLE = b"P"[0]
CLOUDPICKLE = b"C"[0]
HEADER_SIZE = 5
_PLAIN_HEADER = MAGIC + bytes([FORMAT_VERSION, PICKLE])
_CLOUD_HEADER = MAGIC + bytes([FORMAT_VERSION, CLOUDPICKLE])
_PROTOCOL = 5
PLAIN_HEADER = _PLAIN_HEADER  # what the driver's flattened activation writes and reads
PROTOCOL = _PROTOCOL
COPY_LIMIT = 1024
"""Blobs up to this size are unpickled from a copy of their payload (cheaper
than a memoryview for small blobs), larger ones through a memoryview."""


class BlobInfo(NamedTuple):
    """What the header of a stored blob says."""

    format_version: int
    serializer: str  # "pickle" or "cloudpickle"
    size: int


def encode(snapshot: object, *, step_id: str, key: object) -> bytes:
    """Header + pickle of ``snapshot`` (what ``snapshot()`` returned for
    ``key``); cloudpickle only if pickle fails."""
    try:
        return _pickled(snapshot)
    except _Unpicklable as failed:
        raise SnapshotError(
            step_id, key, "snapshot", snapshot,
            f"snapshot() returned a value that cannot be pickled: {failed.plain}; "
            "return plain data (dicts, tuples, numbers, strings, datetimes)",
        ) from failed.__cause__


class _Unpicklable(Exception):
    """Neither pickle nor cloudpickle took a value (``plain``: pickle's error)."""

    def __init__(self, plain: Exception) -> None:
        super().__init__(str(plain))
        self.plain = plain


def _pickled(value: object) -> bytes:
    """Header + pickle of ``value``, cloudpickle's when pickle fails, or
    ``_Unpicklable`` (cloudpickle's error as its cause)."""
    try:
        return _PLAIN_HEADER + pickle.dumps(value, protocol=_PROTOCOL)
    except Exception as plain_error:  # PicklingError, TypeError, AttributeError...
        try:
            payload: bytes = _cloudpickle().dumps(value, protocol=_PROTOCOL)
            return _CLOUD_HEADER + payload
        except Exception as cloud_error:
            raise _Unpicklable(plain_error) from cloud_error


def _cloudpickle() -> ModuleType:
    """cloudpickle, or PySpark's bundled copy on executors that lack the package."""
    try:
        import cloudpickle
    except ImportError:
        from pyspark import cloudpickle
    module: ModuleType = cloudpickle  # the package has no type information (Any)
    return module


def blob_info(blob: bytes, *, step_id: str = "?", key: object = None) -> BlobInfo:
    """Read and check a blob's header (raises SnapshotError for foreign blobs)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise SnapshotError(step_id, key, "decode", blob, "stored state is not bytes")
    head = bytes(blob[:HEADER_SIZE])
    if len(head) < HEADER_SIZE or head[:3] != MAGIC:
        raise SnapshotError(step_id, key, "decode", bytes(blob[:16]),
                            "not a sparkwax snapshot: bad header")
    version, serializer = head[3], head[4]
    if version != FORMAT_VERSION:
        raise SnapshotError(step_id, key, "decode", version,
                            f"snapshot format version {version} is not supported "
                            f"(this sparkwax reads version {FORMAT_VERSION})")
    if serializer not in (PICKLE, CLOUDPICKLE):
        raise SnapshotError(step_id, key, "decode", bytes([serializer]),
                            "unknown serializer byte in snapshot header")
    name = "pickle" if serializer == PICKLE else "cloudpickle"
    return BlobInfo(version, name, len(blob))


def encode_snapshot(snapshot: object) -> bytes:
    """``snapshot`` encoded as a step stores it (and as a seed's
    ``snapshot`` column holds it: ``sw.stateful(..., seed=)``). A value that
    cannot be pickled is a SnapshotError about that value (``callback``
    ``"encode_snapshot"``; no step or key: it is not a step's yet).

    >>> decode(encode_snapshot((3, "open")), step_id="s", key="k")
    (3, 'open')
    """
    try:
        return _pickled(snapshot)
    except _Unpicklable as failed:
        error = SnapshotError("", None, "encode_snapshot", snapshot,
                              f"the value given cannot be pickled: {failed.plain}; give it "
                              "plain data (dicts, tuples, numbers, strings, datetimes), as "
                              "the step's builder takes for resume_state")
        Exception.__init__(error, f"sw.encode_snapshot: {error.reason} "
                                  f"(got {short_repr(snapshot)})")
        raise error from failed.__cause__


def decode(blob: bytes, *, step_id: str, key: object) -> object:
    """The snapshot value stored in ``blob``; never mistakes a bad blob for "no state"."""
    if type(blob) is bytes and blob.startswith(_PLAIN_HEADER):
        try:  # the common case, without building a BlobInfo
            return pickle.loads(blob[HEADER_SIZE:] if len(blob) <= COPY_LIMIT
                                else memoryview(blob)[HEADER_SIZE:])
        except Exception:
            pass  # the full path below says what is wrong
    if blob is None:
        raise SnapshotError(step_id, key, "decode", None, "no stored state to decode")
    info = blob_info(blob, step_id=step_id, key=key)
    try:
        if info.serializer == "cloudpickle":
            _cloudpickle()  # registers what by-value classes need
        return pickle.loads(memoryview(blob)[HEADER_SIZE:])
    except Exception as error:
        raise SnapshotError(step_id, key, "decode", bytes(blob[:16]),
                            f"stored snapshot ({info.size} bytes, {info.serializer}) "
                            f"cannot be unpickled: {error!r}") from error


__all__ = ["BlobInfo", "FORMAT_VERSION", "SnapshotError", "blob_info", "decode", "encode"]
