"""A packed bucket's keys, stored by column: the packed host's state value.

Per user key: its encoded snapshot (a blob), its timer (``notify_at`` in epoch
ms) and the timeout the host armed for it. The bucket is stored as one pickle
(protocol 5) of ``("swb1", keys, buffer, ends, timers, armed)``: the blobs lie
back to back in one ``bytes`` buffer (``ends`` are their cumulative end
offsets, uint32 while the buffer is under 4 GiB), the timers are int64 arrays
with ``NONE`` for "no timer", stored as None when no key has one (a logic
without timers pays ~4 bytes per key besides its key and blob). Keys that
did not run this micro-batch are never turned into Python objects of their
own: rewriting the bucket copies their bytes (one memcpy per run of untouched
keys), so a batch costs ``O(keys touched)`` Python work plus ``O(bucket size)``
copying and the pickle of the key list.

That pickle is then compressed with zstd (pyarrow's codec) when that makes
it smaller: the state value travels from the JVM to the Python worker
through Spark's row pickler, which costs far more per byte than zstd, and
the state store keeps it in the JVM's heap and writes it to the checkpoint
(a bucket of counters: 3.3x smaller; the pickler's share of the JVM's CPU at
100k keys went from 10.3% to 9.5%, see docs/performance.md). A compressed value is
``MAGIC``, the pickle's size (8 bytes, little-endian) and the zstd frame; a
value without ``MAGIC`` is the plain pickle (written before compression, or
incompressible), and both decode.

>>> bucket = Bucket.empty()
>>> bucket.put("a", b"xx", 10, 9)
>>> bucket.put("b", b"y", None, None)
>>> blob, earliest = bucket.encode()
>>> blob.startswith(MAGIC)  # too small to gain from compression
False
>>> again = Bucket.decode(blob)
>>> again.get("a"), again.get("b"), again.get("c"), earliest
(b'xx', b'y', None, 9)
>>> again.entry("a"), again.entry("c")  # (blob, timer)
((b'xx', 10), (None, None))
>>> again.due(now_ms=100)  # stored keys whose armed timeout < now
['a']
>>> again.remove("a"); len(again)
1
>>> many = Bucket.empty()
>>> for key in range(1000):
...     many.put(key, b"SWX\x01P" + bytes([key % 7]) * 8, None, None)
>>> blob, _ = many.encode()
>>> blob.startswith(MAGIC), len(blob) < len(_decompressed(blob)) // 3, len(Bucket.decode(blob))
(True, True, 1000)
"""

from __future__ import annotations

import pickle
from itertools import repeat
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...timers import timeout_fired

FORMAT = "swb1"
MAGIC = b"SWZ1"  # a zstd-compressed bucket pickle follows (then its size, then the frame)
_CODEC = "zstd"
_SIZE = 8
_HEADER = len(MAGIC) + _SIZE
_ZSTD = pa.Codec.is_available(_CODEC)  # pyarrow's wheels have it; else values stay plain
_COMPRESS_FROM = 512  # bytes of pickle: under this, compression gains too little
_LARGEST = 2 ** 31  # a Spark binary value (a Java byte array) holds less
NONE = np.iinfo(np.int64).min  # "no timer" in the timer columns
_REMOVED = None


class Bucket:
    """The keys of one bucket; ``put``/``remove`` record changes that
    ``encode`` merges into the stored columns."""

    def __init__(self, keys: List[Any], buffer: bytes, ends: np.ndarray, timers: np.ndarray,
                 armed: np.ndarray):
        self.keys = keys
        self.buffer = buffer
        self.ends = ends
        self.timers = timers
        self.armed = armed
        self._positions: Optional[Dict[Any, int]] = None
        self._lists: Optional[Tuple[List[int], List[int]]] = None  # ends, timers as ints
        self._changes: Dict[Any, Optional[Tuple[bytes, Optional[int], Optional[int]]]] = {}

    @classmethod
    def empty(cls) -> "Bucket":
        nothing = np.zeros(0, dtype=np.int64)
        return cls([], b"", nothing, nothing, nothing)

    @classmethod
    def decode(cls, blob: bytes) -> "Bucket":
        stored = pickle.loads(_decompressed(blob))
        if type(stored) is not tuple or not stored or stored[0] != FORMAT:
            raise ValueError("not a sparkwax bucket state (format 'swb1')")
        _, keys, buffer, ends, timers, armed = stored
        return cls(keys, buffer, ends.astype(np.int64), _column(timers, len(keys)),
                   _column(armed, len(keys)))

    def __len__(self) -> int:
        positions = self.positions()
        size = len(self.keys)
        for key, change in self._changes.items():
            if change is None:
                size -= key in positions
            elif key not in positions:
                size += 1
        return size

    def positions(self) -> Dict[Any, int]:
        if self._positions is None:
            self._positions = dict(zip(self.keys, range(len(self.keys))))
        return self._positions

    def get(self, key: Any) -> Optional[bytes]:
        """The key's stored blob, or None."""
        return self.entry(key)[0]

    def timer(self, key: Any) -> Optional[int]:
        """The timer committed with the key's blob (None: none, or no key)."""
        return self.entry(key)[1]

    def entry(self, key: Any) -> Tuple[Optional[bytes], Optional[int]]:
        """``(get(key), timer(key))`` in one lookup (``entries_of`` for one key)."""
        blobs, timers = self.entries_of((key,))
        return blobs[0], timers[0]

    def entries_of(self, keys: Sequence[Any]) -> Tuple[List[Optional[bytes]],
                                                       List[Optional[int]]]:
        """``entry`` of each of ``keys``, as two lists: the blobs and the
        timers (the packed host's read: one call per bucket, from plain lists
        read once per bucket, not numpy scalars).

        >>> bucket = Bucket.empty(); bucket.put("a", b"x", 5, 4)
        >>> bucket.entries_of(["a", "z"])
        ([b'x', None], [5, None])
        """
        changes, get = self._changes, self.positions().get
        ends, timers = self._as_lists()
        buffer = self.buffer
        blobs: List[Optional[bytes]] = []
        committed: List[Optional[int]] = []
        for key in keys:
            if key in changes:
                change = changes[key]
                blobs.append(None if change is None else change[0])
                committed.append(None if change is None else change[1])
                continue
            position = get(key)
            if position is None:
                blobs.append(None)
                committed.append(None)
                continue
            timer = timers[position]  # _plain, inline: once per key
            blobs.append(buffer[ends[position - 1] if position else 0:ends[position]])
            committed.append(None if timer == NONE else timer)
        return blobs, committed

    def put_all(self, keys: Sequence[Any], blobs: Sequence[Optional[bytes]],
                timers: Sequence[Optional[int]], armed: Optional[Sequence[Optional[int]]]
                ) -> None:
        """``put`` each key (``remove`` it where its blob is None); ``armed``
        None: no key's timeout is armed.

        >>> bucket = Bucket.empty(); bucket.put_all(["a", "b"], [b"x", None], [5, None], None)
        >>> len(bucket), bucket.entry("a")
        (1, (b'x', 5))
        """
        changes = self._changes
        for key, blob, timer, armed_ms in zip(keys, blobs, timers,
                                              repeat(None) if armed is None else armed):
            changes[key] = _REMOVED if blob is None else (blob, timer, armed_ms)

    def _as_lists(self) -> Tuple[List[int], List[int]]:
        if self._lists is None:
            self._lists = (self.ends.tolist(), self.timers.tolist())
        return self._lists

    def put(self, key: Any, blob: bytes, timer: Optional[int], armed: Optional[int]) -> None:
        self._changes[key] = (blob, timer, armed)

    def remove(self, key: Any) -> None:
        self._changes[key] = _REMOVED

    def due(self, now_ms: int) -> List[Any]:
        """Stored keys whose armed timeout Spark would have fired
        (``timers.timeout_fired``, on the whole column at once)."""
        fired = np.flatnonzero((self.armed != NONE) & timeout_fired(self.armed, now_ms))
        return [self.keys[i] for i in fired.tolist()]

    def entries(self) -> Iterator[Tuple[Any, bytes, Optional[int], Optional[int]]]:
        """``(key, blob, timer, armed)`` of every stored key (changes not included)."""
        start = 0
        for key, end, timer, armed in zip(self.keys, self.ends.tolist(), self.timers.tolist(),
                                          self.armed.tolist()):
            yield key, self.buffer[start:end], _plain(timer), _plain(armed)
            start = end

    def encode(self) -> Tuple[bytes, Optional[int]]:
        """The new state value and the earliest armed timeout (None: none armed)."""
        keys, buffer, ends, timers, armed = self._merged()
        live = armed[armed != NONE]
        earliest = int(live.min()) if len(live) else None
        compact = ends.astype(np.uint32) if len(buffer) < 2 ** 32 else ends
        blob = pickle.dumps((FORMAT, keys, buffer, compact, _compact(timers), _compact(armed)),
                            protocol=5)
        return _compressed(blob), earliest

    def _merged(self) -> Tuple[List[Any], bytes, np.ndarray, np.ndarray, np.ndarray]:
        """The stored columns with the changes applied: replaced blobs in
        place, removed keys out, new keys at the end (Python lists while
        merging: a numpy scalar per changed key costs more than the list)."""
        if not self._changes:
            return self.keys, self.buffer, self.ends, self.timers, self.armed
        positions = self.positions()
        ends, timers = self._as_lists()
        timers = list(timers)
        armed = self.armed.tolist()
        lengths = np.diff(self.ends, prepend=0).tolist()
        replaced: Dict[int, bytes] = {}
        removed: List[int] = []
        new_keys: List[Any] = []
        new_blobs: List[bytes] = []
        for key, change in self._changes.items():
            position = positions.get(key)
            if position is None:
                if change is not None:
                    new_keys.append(key)
                    new_blobs.append(change[0])
                    lengths.append(len(change[0]))
                    timers.append(_stored(change[1]))
                    armed.append(_stored(change[2]))
            elif change is None:
                removed.append(position)
            else:
                blob, timer, armed_ms = change  # _stored, inline: once per key run (dense: all)
                replaced[position] = blob
                lengths[position] = len(blob)
                timers[position] = NONE if timer is None else timer
                armed[position] = NONE if armed_ms is None else armed_ms
        pieces, start = [], 0
        for position in sorted(list(replaced) + removed):
            pieces.append(self.buffer[start:ends[position - 1] if position else 0])
            pieces.append(replaced.get(position, b""))
            start = ends[position]
        pieces.append(self.buffer[start:])
        pieces.extend(new_blobs)
        keys = self.keys + new_keys
        if removed:
            gone = set(removed)
            kept = [i for i in range(len(keys)) if i not in gone]
            keys = [keys[i] for i in kept]
            lengths = [lengths[i] for i in kept]
            timers = [timers[i] for i in kept]
            armed = [armed[i] for i in kept]
        return (keys, b"".join(pieces), np.cumsum(np.array(lengths, dtype=np.int64)),
                np.array(timers, dtype=np.int64), np.array(armed, dtype=np.int64))


def _compressed(blob: bytes) -> bytes:
    """``blob`` as stored: compressed when that makes it smaller."""
    if len(blob) < _COMPRESS_FROM or not _ZSTD:
        return blob
    frame = pa.compress(blob, codec=_CODEC, asbytes=True)
    if len(frame) + _HEADER >= len(blob):
        return blob  # incompressible (random snapshots): kept as it is
    return b"".join((MAGIC, len(blob).to_bytes(_SIZE, "little"), frame))


def pickled_size(blob: bytes) -> int:
    """The size of the bucket pickle a stored value holds (read from its
    header when compressed): what the state-row limit is held to.

    >>> pickled_size(b"plain pickle"), pickled_size(MAGIC + (700).to_bytes(8, "little"))
    (12, 700)
    """
    if not blob.startswith(MAGIC):
        return len(blob)
    return int.from_bytes(blob[len(MAGIC):_HEADER], "little")


def _decompressed(blob: bytes) -> bytes:
    """The bucket pickle of a stored value (compressed or not); a damaged
    compressed value is a ValueError (the packed host names the step)."""
    if not blob.startswith(MAGIC):
        return blob
    size = pickled_size(blob)
    if size > _LARGEST:  # a damaged header: no state row holds that much
        raise ValueError(f"a compressed sparkwax bucket state claims {size:,} bytes")
    try:
        plain: bytes = pa.decompress(memoryview(blob)[_HEADER:], decompressed_size=size,
                                     codec=_CODEC, asbytes=True)
        return plain
    except (OSError, pa.ArrowException) as error:
        raise ValueError(f"a damaged compressed sparkwax bucket state ({error})") from None


def _compact(column: np.ndarray) -> Optional[np.ndarray]:
    """None for a column without any timer (the common case: no notify_at)."""
    return None if not len(column) or bool((column == NONE).all()) else column


def _column(stored: Optional[np.ndarray], size: int) -> np.ndarray:
    return np.full(size, NONE, dtype=np.int64) if stored is None else stored


def _stored(ms: Optional[int]) -> int:
    return NONE if ms is None else ms


def _plain(ms: int) -> Optional[int]:
    return None if ms == NONE else ms
