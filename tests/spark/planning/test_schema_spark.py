"""sparkwax.schema's DDL parser against Spark's own (``StructType.fromDDL``):
the same field names, types and nullability for every type sparkwax accepts,
and both refuse the same DDL."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

import sparkwax as sw
from sparkwax.schema import parse_ddl, struct_of

from cross_host import DDL_CASES, DDL_REFUSED


def _without_metadata(value):
    """pyspark's jsonValue() without the metadata (comments) sparkwax drops."""
    if isinstance(value, dict):
        return {k: _without_metadata(v) for k, v in value.items() if k != "metadata"}
    if isinstance(value, list):
        return [_without_metadata(v) for v in value]
    return value


@pytest.mark.parametrize("ddl", DDL_CASES)
def test_sparkwax_reads_ddl_as_spark_does(spark, ddl):
    theirs = T.StructType.fromDDL(ddl)
    ours = parse_ddl(ddl)
    assert ours.json_value() == _without_metadata(theirs.jsonValue())
    assert struct_of(theirs) == ours  # a pyspark StructType, read through jsonValue()
    assert ours.simple_string() == theirs.simpleString()
    assert T.StructType.fromDDL(ours.ddl()) == T.StructType.fromJson(ours.json_value())


@pytest.mark.parametrize("ddl", DDL_REFUSED)
def test_ddl_spark_refuses_sparkwax_refuses(spark, ddl):
    try:
        parsed = T.StructType.fromDDL(ddl)
    except Exception:
        parsed = None
    # "" is an empty schema to Spark: no output schema either way
    assert parsed is None or not parsed.fields, parsed
    with pytest.raises(sw.ConfigError, match="cannot parse the schema"):
        parse_ddl(ddl)
