"""The columns a step's plan hands its host (``plan.plan_step``): the key,
value and order columns projected with timestamps as epoch µs and nulls of
bigint columns as a value (``hosts.columns.InputLayout`` says how the host
reads them back), and the checks that name a missing column.
"""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, cast

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...errors import ConfigError
from ...timers import EventTime, TimeMode
from ..hosts.columns import INTEGER, NESTED, NULL_MICROS, OTHER, TIMESTAMP

EVENT_US = "__sw_event_us"  # the event-time column's µs copy, which the host reads
INTEGERS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def project_input(df: DataFrame, keys: Sequence[str], value_names: Sequence[str],
             order: Sequence[str], fields: Mapping[str, T.StructField],
             time: Optional[TimeMode], null_longs: Sequence[str],
             step_id: str) -> DataFrame:
    """Key, value and order columns; timestamps as epoch µs, nulls as
    ``NULL_MICROS`` so the column stays int64 (event column kept as a
    timestamp for the watermark, plus its µs copy); the ``null_longs``
    bigint columns with nulls as ``NULL_MICROS`` (``InputLayout``), that
    value itself refused by name."""
    wanted: List[str] = list(dict.fromkeys([*keys, *value_names, *order]))
    event = isinstance(time, EventTime)
    event_column = cast(EventTime, time).column if event else ""
    columns = []
    for name in wanted:
        column = F.col(f"`{name}`")
        if name not in keys and isinstance(fields[name].dataType, T.TimestampType) and not (
                event and name == event_column):
            column = F.coalesce(F.unix_micros(column), F.lit(NULL_MICROS)).alias(name)
        if name in null_longs:
            least = F.lit(NULL_MICROS).cast(T.LongType())
            refused = F.raise_error(F.lit(
                f"step {step_id!r}: column {name!r} holds {NULL_MICROS}, the least bigint, "
                "which sparkwax sends in place of a null in a nullable bigint input column"))
            column = F.when(column == least, refused).otherwise(
                F.coalesce(column, least)).cast(T.LongType()).alias(name)
        columns.append(column)
    if event:
        if event_column not in wanted:
            columns.append(F.col(f"`{event_column}`"))
        columns.append(F.coalesce(F.unix_micros(F.col(f"`{event_column}`")),
                                  F.lit(NULL_MICROS)).alias(EVENT_US))
    return df.select(*columns)


def nullable_longs(keys: Sequence[str], names: Sequence[str],
                    fields: Mapping[str, T.StructField]) -> List[str]:
    """The nullable bigint value and order columns: sent with their nulls as
    a value (``InputLayout.null_longs``), as pandas would hand them as floats
    with a null among them (a bigint beyond 2**53 rounded). Narrower integers
    fit a float."""
    return [name for name in dict.fromkeys(names) if name not in keys
            and fields[name].nullable and isinstance(fields[name].dataType, T.LongType)]


def value_kind(field: T.StructField) -> str:
    if isinstance(field.dataType, INTEGERS):
        return INTEGER
    if isinstance(field.dataType, T.TimestampType):
        return TIMESTAMP
    if holds_array(field.dataType):
        return NESTED
    return OTHER


def holds_array(data_type: T.DataType) -> bool:
    """Whether ``data_type`` is or holds an array (see ``columns.NESTED``)."""
    if isinstance(data_type, T.ArrayType):
        return True
    if isinstance(data_type, T.StructType):
        return any(holds_array(f.dataType) for f in data_type.fields)
    if isinstance(data_type, T.MapType):
        return holds_array(data_type.keyType) or holds_array(data_type.valueType)
    return False


def require_columns(step_id: str, role: str, names: Sequence[str],
                     fields: Mapping[str, T.StructField]) -> None:
    missing = [n for n in names if n not in fields]
    if missing:
        raise ConfigError(f"step {step_id!r}: {role} names missing column(s) {missing}; "
                          f"the DataFrame has {list(fields)}")


__all__ = ["EVENT_US", "holds_array", "nullable_longs", "project_input", "require_columns",
           "value_kind"]
