"""Output schemas: parsed (``parse_schema``, ``parse_ddl``: every Spark entry
point reads a step's ``output_schema`` here), derived from an input
DataFrame, and ``split_late``.

Operators that emit input values (``deduplicate``, ``throttle``, late window
values, ``collect``...) need the input's columns in their ``output_schema``:

    value_fields(events, key="user")   -> "`ts` timestamp, `amount` double"
    value_struct(events, key="user")   -> "struct<`ts`: timestamp, `amount`: double>"
"""

from __future__ import annotations

from typing import Any, List, Tuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...builders import KeySpec, key_list
from ...errors import ConfigError
from ..deploy.session_confs import is_connect
from ..spark_version import from_ddl


STEP_METADATA = "sparkwax.step"  # a step's description, in its output columns' metadata
UPSTREAM_METADATA = "sparkwax.upstream"  # the descriptions of the steps it follows in a query


def ddl(data_type: T.DataType) -> str:
    """A Spark data type as DDL, field names quoted (nested types included)."""
    if isinstance(data_type, T.StructType):
        inner = ", ".join(f"{_quote(f.name)}: {ddl(f.dataType)}" for f in data_type.fields)
        return f"struct<{inner}>"
    if isinstance(data_type, T.ArrayType):
        return f"array<{ddl(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"map<{ddl(data_type.keyType)}, {ddl(data_type.valueType)}>"
    return data_type.simpleString()


def parse_schema(df: Any, schema: Any, step_id: str) -> T.StructType:
    """A step's ``output_schema`` (DDL or a StructType) as a StructType."""
    if isinstance(schema, T.StructType):
        return schema
    if isinstance(schema, str):
        try:
            parsed = parse_ddl(df.sparkSession, schema)
        except Exception as error:
            raise ConfigError(f"step {step_id!r}: cannot parse output_schema {schema!r}: "
                              f"{error}") from None
        if isinstance(parsed, T.StructType):
            return parsed
    raise ConfigError(f"step {step_id!r}: output_schema must be a DDL string or a StructType, "
                      f"got {schema!r}")


def parse_ddl(spark: Any, text: str) -> T.DataType:
    """``"a long, b string"`` as a StructType, parsed by ``spark`` (a Spark
    Connect client has no local parser: the server parses it)."""
    if is_connect(spark):
        parsed: T.DataType = spark.createDataFrame([], text).schema
        return parsed
    local: T.DataType = from_ddl(text)
    return local


def value_columns(df: DataFrame, key: KeySpec) -> List[T.StructField]:
    """The fields of ``df`` other than the key columns (what a logic receives)."""
    keys = set(key_list(key))
    return [f for f in df.schema.fields if f.name not in keys]


def value_fields(df: DataFrame, key: KeySpec) -> str:
    """DDL of ``df``'s non-key columns, as top-level output fields: use it as
    ``output_schema`` for an operator that emits its input values."""
    return ", ".join(f"{_quote(f.name)} {ddl(f.dataType)}" for f in value_columns(df, key))


def value_struct(df: DataFrame, key: KeySpec) -> str:
    """DDL type ``struct<...>`` of ``df``'s non-key columns: a field type for a
    nested input value (late window values, ``collect`` lists...)."""
    inner = ", ".join(f"{_quote(f.name)}: {ddl(f.dataType)}" for f in value_columns(df, key))
    return f"struct<{inner}>"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def split_late(frame: DataFrame) -> Tuple[DataFrame, DataFrame]:
    """A window operator's DataFrame as ``(results, late)``: results without
    the ``late`` column, late rows with the late value's fields as columns.
    (For a stream, split inside ``foreachBatch`` rather than running two
    queries.)"""
    results = frame.where(F.col("late").isNull()).drop("late")
    head = [c for c in frame.columns if c not in ("value", "late")]
    late = frame.where(F.col("late").isNotNull()).select(*[F.col(f"`{c}`") for c in head],
                                                         "late.*")
    return results, late
