"""Emitted values -> one pandas frame of output rows (key columns first).

An emit may be a dict (by field name), a tuple (by position), a dataclass
instance, or a scalar when the output schema has one field. Every emit is
checked with the core's checker (``sparkwax.schema.OutputSchema``, the one the
offline runner uses): a value that does not fit (type, field, nullability,
range, nested element) is a SchemaError naming the step, the key, the field's
path and the value, before Arrow sees it.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from pyspark.sql import types as T

from ...errors import SchemaError
from ...metrics import FIELDS, StepMetrics
from ...schema import OutputSchema
from ...timers import to_epoch_us

METRICS_COLUMN = "__sw_metrics"  # array<long>: a call's counts, ONLY_METRICS or 0, its stages'
ONLY_METRICS = 1   # last element of a row that carries counts only (dropped from the output)


class OutputBuilder:
    """Builds one output frame from the emits of one or many keys.

    ``frame_of(groups)`` takes ``(key, key_values, emits)`` per key and makes
    one pandas frame for all of them (a frame per key costs ~0.1 ms, which the
    packed host would pay once per key); ``frame`` is the one-key shorthand.
    With ``metrics=True`` (streaming hosts) every frame has one more column,
    ``METRICS_COLUMN``: ``frame_of(groups, counts)`` puts a call's counts on
    its first output row (null on the others); a call without output rows
    sends ``metrics_frame``, one row of counts only. A chained step's call
    adds its ``stages``' counts after the flag (``counts_row``). The plan
    observes the column, drops the counts-only rows, then the column.
    """

    def __init__(self, key_names: Sequence[str], schema: T.StructType, step_id: str,
                 metrics: bool = False):
        self.checker = OutputSchema.of(schema, step_id)  # a ConfigError for a type it lacks
        self.key_names = list(key_names)
        self.fields = list(schema.fields)
        self.names = [f.name for f in self.fields]
        self.width = len(self.fields)
        self.step_id = step_id
        self.metrics = metrics
        self.columns = self.key_names + self.names + ([METRICS_COLUMN] if metrics else [])
        self._index = pd.Index(self.columns, dtype=object)
        self._nulls = {f.name: _null_of(f) for f in self.fields}
        self._typed = [_TYPED.get(type(f.dataType)) for f in self.fields]
        self._timestamp = [isinstance(f.dataType, T.TimestampType) for f in self.fields]

    def frame(self, key: Any, key_values: Tuple[Any, ...], emits: List[Any],
              counts: Optional[StepMetrics] = None, stages: Sequence[StepMetrics] = ()
              ) -> pd.DataFrame:
        return self.frame_of([(key, key_values, emits)], counts, stages)

    def frame_of(self, groups: Sequence[Tuple[Any, Tuple[Any, ...], List[Any]]],
                 counts: Optional[StepMetrics] = None, stages: Sequence[StepMetrics] = ()
                 ) -> pd.DataFrame:
        sizes = [len(emits) for _, _, emits in groups]
        data: Dict[str, Any] = {}
        for index, name in enumerate(self.key_names):
            column: List[Any] = []
            for (_, key_values, _), count in zip(groups, sizes):
                column += [key_values[index]] * count
            data[name] = column
        emits = (groups[0][2] if len(groups) == 1 else
                 [value for _, _, values in groups for value in values])
        keys = _RowKeys(groups, sizes)
        columns = self.checker.columns(emits)
        if columns is None:
            self._refuse(emits, keys)
        for index, cells in enumerate(columns or ()):
            data[self.names[index]] = self._convert(index, cells, emits, keys)
        if self.metrics:
            total = sum(sizes)
            data[METRICS_COLUMN] = _object_array(
                [None] * total if counts is None or not total
                else [counts_row(counts, 0, stages)] + [None] * (total - 1))
        fast = _fast_frame(self._index, list(data.values()), sum(sizes))
        if fast is not None:
            return fast
        if len(data) == len(self.columns):
            # The dict is already in column order: passing columns= as well
            # makes pandas reindex, ~5x the cost of the whole frame.
            return pd.DataFrame(data)
        return pd.DataFrame(data, columns=self.columns)

    def metrics_frame(self, key_values: Tuple[Any, ...], counts: StepMetrics,
                      stages: Sequence[StepMetrics] = ()) -> pd.DataFrame:
        """One row: a key of the call (output fields null) and the counts."""
        data: Dict[str, Any] = {name: [value] for name, value in zip(self.key_names, key_values)}
        data.update(self._nulls)
        data[METRICS_COLUMN] = _object_array([counts_row(counts, ONLY_METRICS, stages)])
        fast = _fast_frame(self._index, list(data.values()), 1)
        return fast if fast is not None else pd.DataFrame(data)

    def _convert(self, index: int, column: List[Any], emits: Sequence[Any],
                 keys: "_RowKeys") -> Any:
        """One field's column, checked, as pandas hands it to Arrow."""
        types = set(map(type, column))  # C-level: most checks look at these only
        if not self.checker.column_ok(index, column, types):
            self._refuse(emits, keys)
        typed = self._typed[index]
        if typed is not None and len(types) == 1 and typed[0] in types:
            # Plain ints/floats/bools (checked to fit): a typed numpy column
            # converts to the same Arrow values as an object one, and keeps the
            # frame a single cheap block (pandas and Arrow both).
            return np.array(column, dtype=typed[1])
        if self._timestamp[index]:
            return timestamp_series(column)
        return _object_array(column)

    def _refuse(self, emits: Sequence[Any], keys: "_RowKeys") -> None:
        """The SchemaError of the first emit that does not fit, in emit order
        (the offline runner finds the same one: it checks key by key, in the
        same sorted key order)."""
        self.checker.raise_first(self.step_id, emits, keys.key_at)
        # the checker's column test and its value test disagree: never seen
        raise SchemaError(self.step_id, None, "output", emits,
                          "an emit does not fit the output schema")


_NAT = np.iinfo(np.int64).min  # numpy's NaT as an int64


def timestamp_series(column: List[Any]) -> pd.Series:
    """Aware datetimes (checked: in ``TIMESTAMP_RANGE``) or None as the
    ``datetime64[ns, UTC]`` Series Spark converts: exact to the microsecond
    (int64 all the way; floats would lose microseconds beyond 2**53 µs,
    about 285 years from 1970).

    >>> from datetime import datetime, timezone
    >>> t = datetime(2260, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)
    >>> timestamp_series([t, None]).tolist()[0].to_pydatetime() == t
    True
    """
    micros = np.array([_NAT if v is None else to_epoch_us(v) for v in column], dtype=np.int64)
    nanos = micros.view("datetime64[us]").astype("datetime64[ns]")
    return pd.Series(nanos, copy=False).dt.tz_localize("UTC")


class _RowKeys:
    """Which key emitted output row ``i`` (only asked when a row is wrong)."""

    def __init__(self, groups: Any, counts: List[int]):
        self.groups = groups
        self.ends = list(itertools.accumulate(counts))

    def key_at(self, index: int) -> Any:
        return self.groups[bisect.bisect_right(self.ends, index)][0]


# Spark type -> (the one Python type of a column that converts as a typed numpy
# column, its numpy dtype); the values were checked to fit before.
_TYPED: Dict[type, Tuple[type, Any]] = {
    T.LongType: (int, np.int64),
    T.IntegerType: (int, np.int32),
    T.ShortType: (int, np.int16),
    T.ByteType: (int, np.int8),
    T.DoubleType: (float, np.float64),
    T.BooleanType: (bool, np.bool_),
}


_FROM_ARRAYS = getattr(pd.DataFrame, "_from_arrays", None)


def _object_array(values: List[Any]) -> np.ndarray:
    """A 1-d object array of ``values`` (lists and tuples stay single cells,
    as in ``pd.Series(values, dtype=object)``)."""
    array = np.empty(len(values), dtype=object)
    for index, value in enumerate(values):
        array[index] = value
    return array


def _fast_frame(index: pd.Index, columns: List[Any], rows: int) -> Optional[pd.DataFrame]:
    """The frame of ``columns`` (in ``index`` order) built from arrays, skipping
    pandas' per-column inference (~3x cheaper for the one-row frames a
    per-key call sends); None when a column is not one pandas would give the
    same dtype (then the caller builds it the ordinary way). A list column
    (the key columns) qualifies when all its values are ints, or all str."""
    if _FROM_ARRAYS is None:
        return None
    arrays = []
    for column in columns:
        if type(column) is list:
            types = set(map(type, column))
            if types <= _INT_TYPES and types:
                column = np.array(column, dtype=np.int64)
            elif types == {str}:
                column = _object_array(column)
            else:
                return None
        elif isinstance(column, pd.Series):
            if column.dtype == object:
                column = column.to_numpy()
            elif isinstance(column.dtype, pd.DatetimeTZDtype):
                column = column.array
            else:
                return None
        elif type(column) is not np.ndarray or column.ndim != 1:
            return None
        arrays.append(column)
    frame: pd.DataFrame = _FROM_ARRAYS(arrays, columns=index, index=_range(rows),
                                       verify_integrity=False)
    return frame


_INT_TYPES = {int, np.int64}
_RANGES = [pd.RangeIndex(n) for n in range(64)]  # immutable: frames may share them


def _range(rows: int) -> pd.RangeIndex:
    return _RANGES[rows] if rows < len(_RANGES) else pd.RangeIndex(rows)


def _null_of(field: T.StructField) -> pd.Series:
    """A one-row null of the field's type, as Arrow can convert it."""
    if isinstance(field.dataType, T.TimestampType):
        return pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")
    return pd.Series([None], dtype=object)


def counts_row(counts: StepMetrics, flag: int, stages: Sequence[StepMetrics] = ()
               ) -> List[int]:
    """A call's ``METRICS_COLUMN`` cell: its counts, the ``flag``
    (``ONLY_METRICS`` or 0), then each stage's counts (a chained step).

    >>> counts_row(StepMetrics(rows_in=2), 0, [StepMetrics(emits=1)])[:9]
    [2, 0, 0, 0, 0, 0, 0, 0, 0]
    >>> counts_row(StepMetrics(rows_in=2), 0, [StepMetrics(emits=1)])[9:]
    [0, 0, 0, 0, 0, 1, 0, 0]
    """
    row = [*counts.values(), flag]
    for stage in stages:
        row.extend(stage.values())
    return row


def stage_offset(index: int) -> int:
    """Where stage ``index``'s counts start in a ``METRICS_COLUMN`` cell."""
    return (index + 1) * len(FIELDS) + 1


def metrics_type() -> T.ArrayType:
    """The Spark type of ``METRICS_COLUMN``: the counts in ``metrics.FIELDS``
    order, then ``ONLY_METRICS`` (a counts-only row) or 0, then a chained
    step's stages' counts (``counts_row``)."""
    return T.ArrayType(T.LongType(), containsNull=False)
