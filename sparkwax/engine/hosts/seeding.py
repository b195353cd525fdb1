"""A seeded step's first state (``sw.stateful(..., seed=)``): each seed row's
snapshot through the driver's ``seed`` (restored and committed as a restart
does), written as the host writes a key's state, its timer armed.

``transformWithStateInPandas`` hands a step's initial state once, before
its first micro-batch's rows (``hosts.tws``: ``handleInitialState``): one
call per key (per key host) or per bucket (packed), a frame of the key
columns, then ``snapshot`` (``SNAPSHOT``: the snapshot as
``sparkwax.encode_snapshot`` wrote it), then (packed) the bucket.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import pandas as pd

from ...errors import ConfigError
from .bucket import Bucket
from .columns import plain_key
from .host import NO_TIMEOUT, check_snapshot_size

SNAPSHOT = "snapshot"  # the seed frame's column of encoded snapshots


def seed_rows(frame: pd.DataFrame, key_count: int, single: bool) -> List[Tuple[Any, bytes]]:
    """``(key, encoded snapshot)`` of each row of a seed frame: its first
    ``key_count`` columns the key, the next its snapshot.

    >>> seed_rows(pd.DataFrame({"user": ["u1"], "snapshot": [b"x"]}), 1, True)
    [('u1', b'x')]
    """
    columns = [frame.iloc[:, index].tolist() for index in range(key_count)]
    blobs = [bytes(blob) for blob in frame.iloc[:, key_count].tolist()]
    return [(plain_key(tuple(values), single), blob) for values, blob in zip(zip(*columns), blobs)]


def seed_key(host: Any, key_values: Tuple[Any, ...], frame: pd.DataFrame, state: Any) -> None:
    """A per-key host's seeded key: one snapshot, as its state row, its
    timeout armed as the driver says (``Driver.seed``) on a ``TwsGroupState``
    (an absolute time whatever the time mode: a due one fires in this
    batch, where ``GroupState`` would wait a batch)."""
    key = plain_key(key_values, host.single_key)
    rows = seed_rows(frame, len(key_values), host.single_key)
    if len(rows) != 1:
        raise ConfigError(f"step {host.driver.step_id!r}: the seed holds {len(rows)} snapshots "
                          f"for key {key!r}; a seed gives each key one")
    now_ms = host.driver.now_ms(state.getCurrentWatermarkMs, state.getCurrentProcessingTimeMs)
    blob, timer, armed, _ = host.driver.seed(key, rows[0][1], now_ms)
    check_snapshot_size(host.driver.step_id, key, len(blob), host.max_snapshot_bytes)
    state.update((blob, timer))
    if armed is not None and host.timeout_conf != NO_TIMEOUT:
        state.setTimeoutTimestamp(armed)  # absolute on TwsGroupState: due now, fires now


def seed_bucket(host: Any, frame: pd.DataFrame, state: Any) -> None:
    """A packed host's seeded bucket: its keys' snapshots, as its state row."""
    rows = seed_rows(frame, len(host.key_names), host.single)
    keys = [key for key, _ in rows]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ConfigError(f"step {host.driver.step_id!r}: the seed holds {keys.count(twice)} "
                          f"snapshots for key {twice!r}; a seed gives each key one")
    now_ms = host.driver.now_ms(state.getCurrentWatermarkMs, state.getCurrentProcessingTimeMs)
    seeded = [host.driver.seed(key, blob, now_ms) for key, blob in rows]
    bucket = Bucket.empty()
    bucket.put_all(keys, [s[0] for s in seeded], [s[1] for s in seeded],
                   [s[2] for s in seeded] if host.timeout_conf != NO_TIMEOUT else None)
    stored, earliest = host._write(state, bucket)
    if stored and earliest is not None and host.timeout_conf != NO_TIMEOUT:
        state.setTimeoutTimestamp(earliest)  # absolute, as for a key


__all__ = ["SNAPSHOT", "seed_bucket", "seed_key", "seed_rows"]
