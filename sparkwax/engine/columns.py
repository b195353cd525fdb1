"""Pandas frames in, values out (and the event times), for one group.

Spark hands a group's rows as pandas frames: integer columns with nulls come
as floats, timestamps as naive session-local values. The plan (see
``plan.py``) sends every timestamp column as epoch microseconds, so here they
become aware UTC datetimes whatever the session time zone is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..timers import EPOCH

INTEGER, TIMESTAMP, OTHER = "integer", "timestamp", "other"


@dataclass(frozen=True)
class InputLayout:
    """Which frame columns make a value, and how to convert each."""

    names: Tuple[str, ...]           # value field names, in order
    sources: Tuple[str, ...]         # the frame column each value field is read from
    kinds: Tuple[str, ...]           # INTEGER / TIMESTAMP / OTHER per column
    scalar: bool                     # value= one column: hand the scalar
    order_by: Tuple[str, ...]        # sort columns (frame names)
    event_column: Optional[str]      # frame column with event time in µs (EventTime mode)


def group_frame(frames) -> pd.DataFrame:
    """One frame for the group (Spark may cut a group into several chunks)."""
    first = next(frames, None)
    if first is None:
        return pd.DataFrame()
    second = next(frames, None)
    if second is None:
        return first
    return pd.concat([first, second, *frames], ignore_index=True)


def read_group(frame: pd.DataFrame, layout: InputLayout
               ) -> Tuple[Sequence[Any], Optional[List[Optional[int]]], Optional[List[list]]]:
    """A group's rows as the driver takes them, in arrival order: the values
    handed to the logic, their event times (µs, None for null) and the
    ``order_by`` columns (the driver puts the rows in order)."""
    if len(frame) == 0:
        return (), ([] if layout.event_column else None), None
    columns = [_column(_column_values(frame, source), kind)
               for source, kind in zip(layout.sources, layout.kinds)]
    if layout.scalar:
        values = columns[0]
    else:
        names = layout.names
        values = [dict(zip(names, row)) for row in zip(*columns)]
    times = None
    if layout.event_column is not None:
        times = _column(_column_values(frame, layout.event_column), INTEGER)
    order = None
    if layout.order_by:
        order = [_column(_column_values(frame, name), OTHER) for name in layout.order_by]
    return values, times, order


_GET_COLUMN_ARRAY = getattr(pd.DataFrame, "_get_column_array", None)


def _column_values(frame: pd.DataFrame, source: str):
    """The stored values of one column (what ``frame[source].tolist()`` reads).

    On a fresh frame (every group's frame is fresh) ``frame[source]`` builds
    and caches a Series, ~4x the cost of reading the block's array directly;
    the Series is used where that private pandas accessor is missing or the
    column name is not unique."""
    if _GET_COLUMN_ARRAY is not None:
        loc = frame.columns.get_loc(source)
        if type(loc) is int:
            return _GET_COLUMN_ARRAY(frame, loc)
    return frame[source]


def _column(series, kind: str) -> list:
    """A column (a Series or the array behind one) as a list of Python values."""
    if kind == INTEGER:
        if series.dtype.kind == "f":
            return [None if x != x else int(x) for x in series.tolist()]
        return series.tolist()
    if kind == TIMESTAMP:
        micros = series.tolist()
        return [None if (x is None or x != x) else EPOCH + timedelta(microseconds=int(x))
                for x in micros]
    if series.dtype == object:
        return series.tolist()
    if series.dtype.kind == "f" and bool(pd.isna(series).any()):
        return [None if x != x else x for x in series.tolist()]
    return series.tolist()


def plain_key(key_values: Tuple[Any, ...], single: bool):
    """Spark's key tuple as plain Python values (a scalar for one key column)."""
    if single:
        value = key_values[0]
        return value.item() if isinstance(value, np.generic) else value
    return tuple(v.item() if isinstance(v, np.generic) else v for v in key_values)
