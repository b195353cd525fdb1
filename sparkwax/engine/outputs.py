"""Emitted values -> one pandas frame of output rows (key columns first).

An emit may be a dict (by field name), a tuple (by position), a dataclass
instance, or a scalar when the output schema has one field. A value that does
not fit is a SchemaError naming the step, the key and the field.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import decimal
import itertools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from pyspark.sql import types as T

from ..errors import SchemaError
from ..metrics import StepMetrics
from ..timers import to_epoch_us

METRICS_COLUMN = "__sw_metrics"  # array<long>: a call's counts, then ONLY_METRICS or 0
ONLY_METRICS = 1   # last element of a row that carries counts only (dropped from the output)


_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_CHECKS: List[Tuple[type, Tuple[type, ...], str]] = [
    (T.StringType, (str,), "a str"),
    (T.BooleanType, (bool, np.bool_), "a bool"),
    (T.DoubleType, (float, int, np.floating, np.integer), "a number"),
    (T.FloatType, (float, int, np.floating, np.integer), "a number"),
    (T.BinaryType, (bytes, bytearray), "bytes"),
    (T.DateType, (dt.date,), "a date"),
    (T.DecimalType, (decimal.Decimal, int), "a Decimal"),
    (T.TimestampNTZType, (dt.datetime,), "a naive datetime"),
    (T.ArrayType, (list, tuple, np.ndarray), "a list"),
    (T.MapType, (dict,), "a dict"),
]


class OutputBuilder:
    """Builds one output frame from the emits of one or many keys.

    ``frame_of(groups)`` takes ``(key, key_values, emits)`` per key and makes
    one pandas frame for all of them (a frame per key costs ~0.1 ms, which the
    packed host would pay once per key); ``frame`` is the one-key shorthand.
    With ``metrics=True`` (streaming hosts) every frame has one more column,
    ``METRICS_COLUMN``: ``frame_of(groups, counts)`` puts a call's counts on
    its first output row (null on the others); a call without output rows
    sends ``metrics_frame``, one row of counts only. The plan observes the
    column, drops the counts-only rows, then the column.
    """

    def __init__(self, key_names: Sequence[str], schema: T.StructType, step_id: str,
                 metrics: bool = False):
        self.key_names = list(key_names)
        self.fields = list(schema.fields)
        self.names = [f.name for f in self.fields]
        self.width = len(self.fields)
        self.step_id = step_id
        self.metrics = metrics
        self.columns = self.key_names + self.names + ([METRICS_COLUMN] if metrics else [])
        self._nulls = {f.name: _null_of(f) for f in self.fields}
        self._checks = [_checker(f) for f in self.fields]
        self._typed = [_TYPED.get(type(f.dataType)) for f in self.fields]

    def frame(self, key, key_values: Tuple[Any, ...], emits: List[Any],
              counts: Optional[StepMetrics] = None) -> pd.DataFrame:
        return self.frame_of([(key, key_values, emits)], counts)

    def frame_of(self, groups: Sequence[Tuple[Any, Tuple[Any, ...], List[Any]]],
                 counts: Optional[StepMetrics] = None) -> pd.DataFrame:
        sizes = [len(emits) for _, _, emits in groups]
        data: Dict[str, Any] = {}
        for index, name in enumerate(self.key_names):
            column: List[Any] = []
            for (_, key_values, _), count in zip(groups, sizes):
                column += [key_values[index]] * count
            data[name] = column
        columns: List[Sequence[Any]]
        if self.width == 1:
            columns = [[value if type(value) in _PLAIN else self._row(key, value)[0]
                        for key, _, emits in groups for value in emits]]
        else:
            rows = [self._row(key, value) for key, _, emits in groups for value in emits]
            columns = list(zip(*rows)) if rows else [()] * self.width
        keys = _RowKeys(groups, sizes)
        for field, check, typed, cells in zip(self.fields, self._checks, self._typed,
                                              columns):
            data[field.name] = self._convert(keys, field, list(cells), check, typed)
        if self.metrics:
            total = sum(sizes)
            data[METRICS_COLUMN] = ([None] * total if counts is None or not total
                                    else [[*counts.values(), 0]] + [None] * (total - 1))
        if len(data) == len(self.columns):
            # The dict is already in column order: passing columns= as well
            # makes pandas reindex, ~5x the cost of the whole frame.
            return pd.DataFrame(data)
        return pd.DataFrame(data, columns=self.columns)

    def metrics_frame(self, key_values: Tuple[Any, ...], counts: StepMetrics) -> pd.DataFrame:
        """One row: a key of the call (output fields null) and the counts."""
        data: Dict[str, Any] = {name: [value] for name, value in zip(self.key_names, key_values)}
        data.update(self._nulls)
        data[METRICS_COLUMN] = [[*counts.values(), ONLY_METRICS]]
        return pd.DataFrame(data)

    def _row(self, key, value) -> Tuple[Any, ...]:
        kind = type(value)
        if kind is tuple or (kind is not dict and isinstance(value, tuple)):
            if len(value) != self.width:
                raise SchemaError(self.step_id, key, "output", value,
                                  f"a tuple emit needs {self.width} values for fields "
                                  f"{self.names}")
            return value
        if kind is dict or isinstance(value, dict):
            if len(value) != self.width or any(n not in value for n in self.names):
                self._mismatch(key, value)
            return tuple(value[n] for n in self.names)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._row(key, {f.name: getattr(value, f.name)
                                   for f in dataclasses.fields(value)})
        if self.width == 1:
            return (value,)
        raise SchemaError(self.step_id, key, "output", value,
                          f"an emit must be a dict, tuple or dataclass with fields {self.names}")

    def _mismatch(self, key, value: dict):
        missing = [n for n in self.names if n not in value]
        extra = [n for n in value if n not in self.names]
        detail = "; ".join(part for part in (
            f"missing field(s) {missing}" if missing else "",
            f"unknown field(s) {extra}" if extra else "") if part)
        raise SchemaError(self.step_id, key, "output", value,
                          f"emitted dict does not match the output schema: {detail}")

    def _convert(self, keys: "_RowKeys", field: T.StructField, column: list, check, typed):
        if typed is not None and column:
            # Plain ints/floats/bools that fit the Spark type exactly: a typed
            # numpy column converts to the same Arrow values as an object one,
            # and keeps the frame a single cheap block (pandas and Arrow both).
            python_type, dtype, low, high = typed
            if set(map(type, column)) == {python_type} and (
                    low is None or (low <= min(column) and max(column) <= high)):
                return np.array(column, dtype=dtype)
        self._check(keys, field, column, check)
        if isinstance(field.dataType, T.TimestampType):
            micros = [np.nan if v is None else to_epoch_us(v) for v in column]
            return pd.to_datetime(pd.Series(micros, dtype="float64"), unit="us", utc=True)
        return pd.Series(column, dtype=object)

    def _check(self, keys: "_RowKeys", field: T.StructField, column: list, check) -> None:
        """Every value fits the field, or a SchemaError names the first that
        does not (and its key). Type-only checks run once per distinct type."""
        check, by_type = check
        if by_type:
            sample = dict(zip(map(type, column), column))  # one value per type
            if all(v is None or check(v) for v in sample.values()) and (
                    field.nullable or type(None) not in sample):
                return
        for index, value in enumerate(column):
            if value is None:
                if not field.nullable:
                    raise SchemaError(self.step_id, keys.key_at(index),
                                      f"output field {field.name!r}", value,
                                      "None for a non-nullable field")
            elif not check(value):
                raise SchemaError(self.step_id, keys.key_at(index),
                                  f"output field {field.name!r}", value,
                                  f"does not fit {field.dataType.simpleString()}"
                                  f"{_timestamp_hint(field, value)}")


class _RowKeys:
    """Which key emitted output row ``i`` (only asked when a row is wrong)."""

    def __init__(self, groups, counts: List[int]):
        self.groups = groups
        self.ends = list(itertools.accumulate(counts))

    def key_at(self, index: int):
        return self.groups[bisect.bisect_right(self.ends, index)][0]


# Emits of these exact types are the value of a one-field schema as they are.
_PLAIN = frozenset({int, float, str, bool, bytes, type(None), dt.datetime, dt.date,
                    decimal.Decimal})


def _int_range(dtype):
    info = np.iinfo(dtype)
    return (int, dtype, int(info.min), int(info.max))


# Spark type -> (exact Python type of every value, numpy dtype, min, max)
_TYPED: Dict[type, Tuple[type, Any, Any, Any]] = {
    T.LongType: _int_range(np.int64),
    T.IntegerType: _int_range(np.int32),
    T.ShortType: _int_range(np.int16),
    T.ByteType: _int_range(np.int8),
    T.DoubleType: (float, np.float64, None, None),
    T.BooleanType: (bool, np.bool_, None, None),
}


def _null_of(field: T.StructField) -> pd.Series:
    """A one-row null of the field's type, as Arrow can convert it."""
    if isinstance(field.dataType, T.TimestampType):
        return pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")
    return pd.Series([None], dtype=object)


def metrics_type() -> T.ArrayType:
    """The Spark type of ``METRICS_COLUMN``: the counts in ``metrics.FIELDS``
    order, then ``ONLY_METRICS`` (a counts-only row) or 0."""
    return T.ArrayType(T.LongType(), containsNull=False)


def _checker(field: T.StructField) -> Tuple[Callable[[Any], bool], bool]:
    """``(check, by_type)``: the value test of a field, and whether it only
    looks at the value's type (then one value per distinct type is enough)."""
    kind = field.dataType
    if isinstance(kind, _INTS):
        return (lambda v: isinstance(v, (int, np.integer))
                and not isinstance(v, (bool, np.bool_))), True
    if isinstance(kind, T.TimestampType):
        return (lambda v: isinstance(v, dt.datetime) and v.utcoffset() is not None), False
    for spark_type, accepted, _ in _CHECKS:
        if isinstance(kind, spark_type):
            if spark_type is T.DateType:
                return (lambda v: isinstance(v, dt.date)
                        and not isinstance(v, dt.datetime)), True
            return (lambda v, accepted=accepted: isinstance(v, accepted)), True
    return (lambda v: True), True  # structs and other types: left to Spark/Arrow


def _timestamp_hint(field: T.StructField, value) -> str:
    if isinstance(field.dataType, T.TimestampType) and isinstance(value, dt.datetime):
        return " (naive datetime: emit an aware one, e.g. tzinfo=timezone.utc)"
    return ""
