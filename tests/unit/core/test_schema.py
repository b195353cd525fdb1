"""sparkwax.schema: Spark's types and DDL without a JVM, and the output checker
(tests/spark/planning/test_schema_spark.py checks the parser against Spark's own)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import pickle
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import sparkwax as sw
from sparkwax.schema import (BIGINT, BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, SMALLINT,
                             STRING, TIMESTAMP, TIMESTAMP_HIGH, TIMESTAMP_LOW,
                             TIMESTAMP_NTZ, TINYINT, ArrayType, CharType,
                             DecimalType, MapType, OutputSchema, StructField, StructType,
                             parse_ddl, parse_type, struct_of, type_of_json)

from cross_host import DDL_CASES, DDL_REFUSED

UTC = dt.timezone.utc


# --- DDL ---------------------------------------------------------------------

@pytest.mark.parametrize("ddl", DDL_CASES)
def test_every_ddl_case_parses_and_reads_back_from_its_json(ddl):
    parsed = parse_ddl(ddl)
    assert type_of_json(parsed.json_value()) == parsed
    assert parse_ddl(parsed.ddl()) == parsed  # ddl() writes what parse_ddl reads


@pytest.mark.parametrize("ddl", DDL_REFUSED)
def test_ddl_spark_refuses_is_a_config_error_with_a_position(ddl):
    with pytest.raises(sw.ConfigError, match="cannot parse the schema .* at position"):
        parse_ddl(ddl)


@pytest.mark.parametrize("text, expected", [
    ("tinyint", TINYINT), ("BYTE", TINYINT), ("smallint", SMALLINT), ("short", SMALLINT),
    ("int", INT), ("Integer", INT), ("bigint", BIGINT), ("long", BIGINT), ("float", FLOAT),
    ("real", FLOAT), ("double", DOUBLE), ("boolean", BOOLEAN), ("string", STRING),
    ("binary", BINARY), ("date", DATE), ("timestamp", TIMESTAMP), ("timestamp_ltz", TIMESTAMP),
    ("timestamp_ntz", TIMESTAMP_NTZ), ("timestamp without time zone", TIMESTAMP_NTZ),
    ("decimal", DecimalType(10, 0)), ("dec(5)", DecimalType(5, 0)),
    ("numeric(7, 3)", DecimalType(7, 3)), ("varchar(4)", CharType("varchar", 4)),
    ("character(2)", CharType("char", 2)),
    ("array<map<string, array<int>>>", ArrayType(MapType(STRING, ArrayType(INT)))),
    ("struct<`a``b`: int not null, c: struct<>>",
     StructType((StructField("a`b", INT, False), StructField("c", StructType())))),
])
def test_types_and_their_aliases(text, expected):
    assert parse_type(text) == expected


def test_simple_strings_are_sparks():
    parsed = parse_ddl("a byte, b long, c decimal(4,1), d array<map<string,timestamp>>, "
                       "e struct<x: real>")
    assert parsed.simple_string() == ("struct<a:tinyint,b:bigint,c:decimal(4,1),"
                                      "d:array<map<string,timestamp>>,e:struct<x:float>>")


@pytest.mark.parametrize("ddl", ["a void", "a interval day", "a variant",
                                 "a string collate utf8_lcase"])
def test_types_sparkwax_does_not_support_are_named(ddl):
    with pytest.raises(sw.ConfigError, match="not supported"):
        parse_ddl(ddl)


def test_struct_of_reads_a_pyspark_like_schema_through_json_value():
    class FakeStructType:  # what pyspark's StructType.jsonValue() returns
        def jsonValue(self):
            return {"type": "struct", "fields": [
                {"name": "n", "type": "long", "nullable": False, "metadata": {}},
                {"name": "xs", "type": {"type": "array", "elementType": "decimal(4,2)",
                                        "containsNull": False},
                 "nullable": True, "metadata": {"comment": "c"}}]}

    assert struct_of(FakeStructType()) == StructType((
        StructField("n", BIGINT, False),
        StructField("xs", ArrayType(DecimalType(4, 2), contains_null=False))))
    assert struct_of("n long") is struct_of("n long")  # DDL is parsed once
    with pytest.raises(sw.ConfigError, match="DDL string or a StructType"):
        struct_of(42)
    with pytest.raises(sw.ConfigError, match="not supported"):
        type_of_json("interval day")


@pytest.mark.parametrize("ddl, match", [
    ("n varchar(3)", "varchar\\(3\\) is not an output type on Spark"),
    ("n array<char(2)>", "char\\(2\\) is not an output type"),
    ("n int, n long", "appears twice"),
    ("struct<>", "at least one field"),
])
def test_output_schemas_spark_would_refuse_are_config_errors(ddl, match):
    with pytest.raises(sw.ConfigError, match=f"step 'st': .*{match}"):
        OutputSchema.of(ddl, "st")


# --- values --------------------------------------------------------------------

AWARE = dt.datetime(2024, 1, 1, tzinfo=UTC)
NAIVE = dt.datetime(2024, 1, 1)

GOOD = [
    (TINYINT, [-128, 127, 0, np.int8(5), np.int64(-3)]),
    (SMALLINT, [-32768, 32767]),
    (INT, [-2 ** 31, 2 ** 31 - 1, np.int32(7)]),
    (BIGINT, [-2 ** 63, 2 ** 63 - 1, np.uint64(5)]),
    (FLOAT, [0.5, 3.4028234663852886e38, -3.4e38, float("inf"), float("nan"), 7, 2 ** 24,
             -2 ** 24, np.float32(1.5)]),
    (DOUBLE, [1e308, -2 ** 53, 2 ** 53, np.float64(2.5), np.int64(3), float("-inf")]),
    (DecimalType(10, 2), [Decimal("99999999.99"), Decimal("-1.5"), Decimal("1.230"),
                          Decimal("1E+3"), Decimal("0E-10"), 99999999, -5]),
    (DecimalType(38, 38), [Decimal("0.5"), Decimal("-0." + "9" * 38)]),
    (BOOLEAN, [True, False, np.bool_(True)]),
    (STRING, ["", "x", "✓", "\U0001f600", "\ud83d\ude00".encode("utf-16", "surrogatepass")
              .decode("utf-16")]),
    (BINARY, [b"", b"x", bytearray(b"\x00")]),
    (DATE, [dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
    (TIMESTAMP, [AWARE, dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
                 TIMESTAMP_LOW, TIMESTAMP_HIGH, dt.datetime(2260, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
                 TIMESTAMP_HIGH.astimezone(dt.timezone(dt.timedelta(hours=5)))]),
    (TIMESTAMP_NTZ, [NAIVE, AWARE, TIMESTAMP_HIGH.replace(tzinfo=None),
                     TIMESTAMP_LOW.replace(tzinfo=None)]),
    (ArrayType(BIGINT), [[], [1, None], (1, 2), np.array([1, 2])]),
    (ArrayType(ArrayType(STRING)), [[["a"], []], [None]]),
    (MapType(STRING, ArrayType(INT)), [{}, {"a": [1]}, {"b": None}]),
    (parse_type("struct<x: int, y: string not null>"), [{"x": None, "y": "a"}, (1, "b")]),
]

BAD = [  # (type, value, path below the value, reason fragment)
    (TINYINT, 128, "", "out of range for tinyint (-128..127)"),
    (TINYINT, np.int64(-129), "", "out of range"),
    (SMALLINT, 40000, "", "out of range for smallint"),
    (INT, 2 ** 40, "", "out of range for int"),
    (BIGINT, 2 ** 63, "", "out of range for bigint"),
    (BIGINT, True, "", "expected an int, not bool"),
    (BIGINT, 1.0, "", "expected an int, not float"),
    (BIGINT, "1", "", "expected an int, not str"),
    (BIGINT, np.float64(1), "", "expected an int"),
    (FLOAT, 1e39, "", "out of range for float"),
    (DOUBLE, 2 ** 53 + 1, "", "an int beyond ±2**53 is not exact as a double"),
    (DOUBLE, -2 ** 63, "", "beyond ±2**53"),
    (FLOAT, 2 ** 24 + 1, "", "an int beyond ±2**24 is not exact as a float"),
    (FLOAT, np.int32(-2 ** 24 - 1), "", "beyond ±2**24"),
    (DOUBLE, True, "", "expected a float or an int, not bool"),
    (DOUBLE, Decimal("1.5"), "", "expected a float or an int, not Decimal"),
    (DecimalType(10, 2), Decimal("123456789012.5"), "", "more than 8 digits before the point"),
    (DecimalType(10, 2), Decimal("123456789.1"), "", "more than 8 digits before the point"),
    (DecimalType(10, 2), Decimal("1.234"), "", "more than 2 digits after the point"),
    (DecimalType(10, 2), Decimal("NaN"), "", "not a finite number"),
    (DecimalType(10, 2), Decimal("-Infinity"), "", "not a finite number"),
    (DecimalType(10, 2), 10 ** 8, "", "more than 8 digits before the point"),
    (DecimalType(38, 0), 2 ** 70, "", "beyond 64 bits"),
    (DecimalType(10, 2), 1.5, "", "expected a Decimal or an int, not float"),
    (DecimalType(38, 38), Decimal("1.5"), "", "more than 0 digits before the point"),
    (BOOLEAN, 1, "", "expected a bool, not int"),
    (STRING, b"x", "", "expected a str, not bytes"),
    (BINARY, "x", "", "expected bytes, not str"),
    (DATE, NAIVE, "", "a datetime, not a date"),
    (DATE, "2024-01-01", "", "expected a date"),
    (TIMESTAMP, NAIVE, "", "naive datetime"),
    (TIMESTAMP, dt.date(2024, 1, 1), "", "expected a datetime, not date"),
    (TIMESTAMP_NTZ, 5, "", "expected a datetime"),
    # beyond pandas' nanoseconds (Spark's output conversion): 1677-09-21 .. 2262-04-11
    (TIMESTAMP, dt.datetime(2263, 1, 1, tzinfo=UTC), "",
     "out of range for timestamp: allowed 1677-09-21 00:12:43.145225 .. "
     "2262-04-11 23:47:16.854775 UTC"),
    (TIMESTAMP, TIMESTAMP_HIGH + dt.timedelta(microseconds=1), "", "out of range"),
    (TIMESTAMP, TIMESTAMP_LOW - dt.timedelta(microseconds=1), "", "out of range"),
    (TIMESTAMP, dt.datetime(1, 1, 1, tzinfo=UTC), "", "out of range"),
    (TIMESTAMP_NTZ, dt.datetime(9999, 1, 1), "", "out of range for timestamp_ntz"),
    (ArrayType(TIMESTAMP), [AWARE, dt.datetime(2263, 1, 1, tzinfo=UTC)], "[1]", "out of range"),
    # a lone surrogate is no UTF-8: Arrow refuses it
    (STRING, "\ud800", "", "a lone surrogate '\\ud800' at index 0 is not UTF-8"),
    (STRING, "ok\udfff", "", "a lone surrogate '\\udfff' at index 2"),
    (MapType(STRING, INT), {"\udc00": 1}, "['\\udc00']", "map key does not fit string"),
    (ArrayType(STRING), ["é", "x\ud800"], "[1]", "lone surrogate"),
    (ArrayType(BIGINT), [1, "x"], "[1]", "expected an int, not str"),
    (ArrayType(BIGINT), "ab", "", "expected a list or tuple, not str"),
    (ArrayType(BIGINT), {1, 2}, "", "expected a list or tuple, not set"),
    (ArrayType(BIGINT, contains_null=False), [1, None], "[1]", "None in an array without nulls"),
    (ArrayType(ArrayType(INT)), [[1], [2, 2 ** 40]], "[1][1]", "out of range for int"),
    (MapType(STRING, INT), {"a": "x"}, "['a']", "expected an int, not str"),
    (MapType(STRING, INT), {1: 1}, "[1]", "map key does not fit string"),
    (MapType(STRING, INT), {None: 1}, "[None]", "a null map key"),
    (MapType(STRING, INT), [("a", 1)], "", "expected a dict, not list"),
    (MapType(DOUBLE, INT), {float("nan"): 1}, "[nan]", "a null map key"),
    (parse_type("struct<x: int, y: string not null>"), {"x": 1}, ".y", "missing field(s) ['y']"),
    (parse_type("struct<x: int, y: string not null>"), {"x": 1, "y": "a", "z": 2}, ".z",
     "unknown field(s) ['z']"),
    (parse_type("struct<x: int, y: string not null>"), (1,), "", "needs 2 values"),
    (parse_type("struct<x: int, y: string not null>"), (1, None), ".y",
     "None for a non-nullable field"),
    (parse_type("struct<x: int, y: string not null>"), ("1", "a"), ".x", "expected an int"),
    (parse_type("struct<x: double not null>"), (float("nan"),), ".x", "NaN (stored as null)"),
]


@pytest.mark.parametrize("kind, values", GOOD, ids=[str(k) for k, _ in GOOD])
def test_values_that_fit(kind, values):
    assert kind.ok(list(values), True)
    for value in values:
        assert StructField("f", kind).misfit(value) is None, value
        assert kind.ok([value], True) and kind.ok([value, None], True)


@pytest.mark.parametrize("kind, value, path, reason", BAD,
                         ids=[f"{k}-{v!r}" for k, v, _, _ in BAD])
def test_values_that_do_not_fit_name_their_path_and_reason(kind, value, path, reason):
    assert not kind.ok([value], True)
    assert not kind.ok([None, value], True)
    found = StructField("f", kind).misfit(value)
    assert found is not None
    assert found[0] == "f" + path
    assert reason in found[2]


@pytest.mark.parametrize("kind", [TINYINT, DOUBLE, STRING, TIMESTAMP, ArrayType(INT),
                                  MapType(STRING, INT), parse_type("struct<x: int>")],
                         ids=str)
def test_nulls_fit_only_nullable_fields(kind):
    assert kind.ok([None], True) and not kind.ok([None], False)
    assert StructField("f", kind, False).misfit(None) == (
        "f", None, "None for a non-nullable field")


def test_nan_is_a_null_in_a_non_nullable_float_field():
    # Arrow stores a NaN of a pandas column as null: a non-nullable field refuses it
    assert DOUBLE.ok([1.0, float("nan")], True)
    assert not DOUBLE.ok([1.0, float("nan")], False)
    assert not FLOAT.ok([np.float32("nan")], False)


# The column test (fast: type sets, min/max) and the value test (the error's
# path and reason) must agree on every column, or a bad value would reach Arrow
# (or a good one be refused).
TYPES = [TINYINT, INT, BIGINT, FLOAT, DOUBLE, DecimalType(5, 2), DecimalType(38, 0), BOOLEAN,
         STRING, BINARY, DATE, TIMESTAMP, TIMESTAMP_NTZ, ArrayType(SMALLINT), ArrayType(DOUBLE, False),
         MapType(STRING, ArrayType(INT)), parse_type("struct<a: tinyint, b: date not null>"),
         parse_type("array<struct<p: decimal(3,1), q: array<timestamp>>>")]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
    st.sampled_from([127, 128, -129, 2 ** 31, 2 ** 63, -2 ** 63, 300, 40000, 2 ** 24 + 1,
                     2 ** 53, -2 ** 53 - 1]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e39, 3.4e38, -1e39]),
    st.decimals(places=None, allow_nan=True, allow_infinity=True),
    st.sampled_from([Decimal("999.99"), Decimal("999.994"), Decimal("1000"), Decimal("1.50"),
                     Decimal("9" * 38), Decimal("1" + "0" * 38), Decimal("1" * 30 + ".0")]),
    st.text(max_size=3), st.binary(max_size=3), st.dates(),
    st.datetimes(timezones=st.sampled_from([None, UTC])),
    st.sampled_from([TIMESTAMP_LOW, TIMESTAMP_HIGH, TIMESTAMP_HIGH.replace(tzinfo=None),
                     TIMESTAMP_HIGH + dt.timedelta(microseconds=1), "\ud800", "é\udfff"]),
    st.sampled_from([np.int64(5), np.int64(2 ** 40), np.float32(1.5), np.bool_(False)]))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.sampled_from(["a", "b", "p", "q", 1]), inner,
                                            max_size=3)),
    max_leaves=8)


def alike(elements):
    """Columns of one kind with nulls: what the typed fast paths see."""
    return st.lists(st.one_of(st.none(), elements), max_size=5)


columns = st.one_of(
    st.lists(values, max_size=4),
    alike(st.integers(-2 ** 64, 2 ** 64)), alike(st.floats()),
    alike(st.decimals(places=None, allow_nan=True, allow_infinity=True)),
    alike(st.sampled_from([Decimal("9" * 38), Decimal("-" + "9" * 38), Decimal("999.99"),
                           Decimal("0.001"), Decimal("1E+5")])),
    alike(st.datetimes(timezones=st.sampled_from([None, UTC]))), alike(st.booleans()),
    alike(st.text(max_size=2)), alike(st.sampled_from(["a", "é", "\ud800", "\U0001f600"])),
    alike(st.lists(st.integers(-2 ** 40, 2 ** 40), max_size=3)),
    alike(st.dictionaries(st.sampled_from(["a", "b", "p", "q"]),
                          st.one_of(st.none(), st.integers(-200, 200), st.dates()),
                          max_size=2)),
    alike(st.tuples(st.integers(-200, 200), st.one_of(st.none(), st.dates()))))


@settings(max_examples=int(os.environ.get("SCHEMA_EXAMPLES", 300)), deadline=None)
@given(kind=st.sampled_from(TYPES), column=columns, nullable=st.booleans())
def test_the_column_test_agrees_with_the_value_test(kind, column, nullable):
    field = StructField("f", kind, nullable)
    assert kind.ok(list(column), nullable) == all(field.misfit(v) is None for v in column)


# --- emits ------------------------------------------------------------------------

@dataclasses.dataclass
class Point:
    x: float
    y: float


def test_emit_shapes():
    schema = OutputSchema.of("x double, y double", "st")
    for emit in [(1.0, 2.0), {"y": 2.0, "x": 1.0}, Point(1.0, 2.0)]:
        schema.check("st", "k", [emit])
    assert schema.columns([(1.0, 2.0), {"x": 3.0, "y": 4.0}]) == [[1.0, 3.0], [2.0, 4.0]]
    one = OutputSchema.of("items array<long>", "st")
    assert one.columns([[1, 2], ([3],), {"items": [4]}]) == [[[1, 2], [3], [4]]]


def test_an_error_names_step_key_field_path_and_value():
    schema = OutputSchema.of("n long, items array<struct<price: decimal(4,2)>>", "orders")
    emits = [(1, []), (2, [{"price": Decimal("1.5")}, {"price": Decimal("100")}])]
    with pytest.raises(sw.SchemaError) as caught:
        schema.check("orders", ("alice", 7), emits)
    error = caught.value
    assert (error.step_id, error.key, error.field, error.value) == (
        "orders", ("alice", 7), "items[1].price", Decimal("100"))
    assert str(error) == ("step 'orders', key ('alice', 7), output field 'items[1].price': "
                          "does not fit decimal(4,2): more than 2 digits before the point "
                          "(got Decimal('100'))")
    again = pickle.loads(pickle.dumps(error))  # Spark ships it from the executor
    assert (type(again), again.field, str(again)) == (sw.SchemaError, error.field, str(error))


def test_the_first_bad_emit_in_order_is_named_shape_or_value():
    schema = OutputSchema.of("n long, label string", "st")
    keys = ["a", "b", "c"]
    with pytest.raises(sw.SchemaError) as caught:  # a value error before a shape error
        schema.raise_first("st", [(1, "x"), (2, 3), {"n": 1}], keys.__getitem__)
    assert (caught.value.key, caught.value.field) == ("b", "label")
    with pytest.raises(sw.SchemaError, match="key .c., output field .z.: emitted dict") as caught:
        schema.check("st", "c", [(1, "x"), {"n": 1, "label": "y", "z": 0}])
    assert caught.value.field == "z"
