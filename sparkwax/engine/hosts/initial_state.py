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


def check_seed_columns(step_id: str, key: Any, frame: pd.DataFrame) -> None:
    """A ConfigError when the seed's ``snapshot`` column did not reach the
    step: Spark's optimizer drops every initial-state column but the key
    when the step's output is transformed in the same query (SPARK-52195,
    seen on PySpark 4.0; fixed in 4.1). Detected here, by what arrives.

    >>> check_seed_columns("acc", "b", pd.DataFrame({"key": ["b"]}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparkwax.errors.ConfigError: step 'acc', key 'b': the seed's 'snapshot' column ...
    """
    if SNAPSHOT in frame.columns:
        return
    raise ConfigError(
        f"step {step_id!r}, key {key!r}: the seed's {SNAPSHOT!r} column did not reach the "
        f"step (its initial state holds only {[str(c) for c in frame.columns]}). Your seed is "
        f"not at fault: Spark dropped the column, a bug of transformWithStateInPandas's "
        f"initial state when the seeded step's output is transformed in the same query "
        f"(a select, a second step; SPARK-52195, fixed in Spark 4.1). Run on PySpark 4.1 or "
        f"newer, or make the seeded step the query's last (write its output as it is)")


def seed_key(host: Any, key_values: Tuple[Any, ...], frame: pd.DataFrame, state: Any) -> None:
    """A per-key host's seeded key: one snapshot, as its state row, its
    timeout armed as the driver says (``Driver.seed``) on a ``TwsGroupState``
    (an absolute time whatever the time mode: a due one fires in this
    batch, where ``GroupState`` would wait a batch)."""
    key = plain_key(key_values, host.single_key)
    check_seed_columns(host.driver.step_id, key, frame)
    rows = seed_rows(frame, len(key_values), host.single_key)
    if len(rows) != 1:
        raise ConfigError(f"step {host.driver.step_id!r}: the seed holds {len(rows)} snapshots "
                          f"for key {key!r}; a seed gives each key one")
    now_ms = host.driver.now_ms(state.getCurrentWatermarkMs, state.getCurrentProcessingTimeMs)
    seeded = host.driver.seed(key, rows[0][1], now_ms)
    blob, timer, armed = seeded.state, seeded.timer, seeded.armed
    check_snapshot_size(host.driver.step_id, key, len(blob), host.max_snapshot_bytes)
    state.update((blob, timer))
    if armed is not None and host.timeout_conf != NO_TIMEOUT:
        state.setTimeoutTimestamp(armed)  # absolute on TwsGroupState: due now, fires now


def seed_bucket(host: Any, frame: pd.DataFrame, state: Any) -> None:
    """A packed host's seeded bucket: its keys' snapshots, as its state row."""
    check_seed_columns(host.driver.step_id, frame.iloc[0, 0] if len(frame.columns) else None,
                       frame)
    rows = seed_rows(frame, len(host.key_names), host.single)
    keys = [key for key, _ in rows]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ConfigError(f"step {host.driver.step_id!r}: the seed holds {keys.count(twice)} "
                          f"snapshots for key {twice!r}; a seed gives each key one")
    now_ms = host.driver.now_ms(state.getCurrentWatermarkMs, state.getCurrentProcessingTimeMs)
    seeded = [host.driver.seed(key, blob, now_ms) for key, blob in rows]
    bucket = Bucket.empty()
    bucket.put_all(keys, [s.state for s in seeded], [s.timer for s in seeded],
                   [s.armed for s in seeded] if host.timeout_conf != NO_TIMEOUT else None)
    stored, earliest = host._write(state, bucket)
    if stored and earliest is not None and host.timeout_conf != NO_TIMEOUT:
        state.setTimeoutTimestamp(earliest)  # absolute, as for a key


__all__ = ["SNAPSHOT", "check_seed_columns", "seed_bucket", "seed_key", "seed_rows"]
