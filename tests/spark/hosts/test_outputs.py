"""OutputBuilder: one frame for the emits of many keys (no Spark session needed)."""

import dataclasses
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from sparkwax.engine.hosts.outputs import OutputBuilder
from sparkwax.errors import SchemaError
from sparkwax.schema import parse_ddl

SCHEMA = T.StructType([T.StructField("n", T.LongType(), False),
                       T.StructField("label", T.StringType())])


@dataclasses.dataclass
class Row:
    n: int
    label: str


def test_frame_of_many_keys_keeps_each_keys_rows_in_order():
    builder = OutputBuilder(["key"], SCHEMA, "step")
    frame = builder.frame_of([
        ("a", ("a",), [(1, "x"), {"label": "y", "n": 2}]),
        ("b", ("b",), [Row(3, None)]),
        ("c", ("c",), [(4, "z"), (5, "w"), (6, "v")]),
    ])
    assert list(frame.columns) == ["key", "n", "label"]
    assert frame.to_dict("list") == {
        "key": ["a", "a", "b", "c", "c", "c"],
        "n": [1, 2, 3, 4, 5, 6],
        "label": ["x", "y", None, "z", "w", "v"],
    }
    assert frame["n"].dtype == "int64"  # plain ints become one typed column


def test_a_bad_value_names_the_key_that_emitted_it():
    builder = OutputBuilder(["key"], SCHEMA, "step")
    groups = [("a", ("a",), [(1, "x")] * 3), ("b", ("b",), [(2, "y"), ("oops", "z")]),
              ("c", ("c",), [(3, "w")])]
    with pytest.raises(SchemaError) as caught:
        builder.frame_of(groups)
    error = caught.value
    assert (error.step_id, error.key, error.callback, error.value) == (
        "step", "b", "output field 'n'", "oops")


def test_none_in_a_non_nullable_field_names_its_key():
    builder = OutputBuilder(["key"], SCHEMA, "step")
    with pytest.raises(SchemaError, match="non-nullable") as caught:
        builder.frame_of([("a", ("a",), [(1, "x")]), ("b", ("b",), [(None, "y")])])
    assert caught.value.key == "b"


def test_one_field_schema_takes_scalars_tuples_and_dicts():
    builder = OutputBuilder(["k1", "k2"], T.StructType([T.StructField("at", T.TimestampType())]),
                            "step")
    moment = datetime(2024, 1, 1, tzinfo=timezone.utc)
    frame = builder.frame_of([((1, "x"), (1, "x"), [moment, (moment,)]),
                              ((2, "y"), (2, "y"), [{"at": None}])])
    assert frame["k1"].tolist() == [1, 1, 2] and frame["k2"].tolist() == ["x", "x", "y"]
    assert frame["at"].iloc[0] == moment and frame["at"].isna().tolist() == [False, False, True]
    with pytest.raises(SchemaError, match="naive datetime") as caught:
        builder.frame_of([((1, "x"), (1, "x"), [moment]),
                          ((2, "y"), (2, "y"), [datetime(2024, 1, 1)])])
    assert caught.value.key == (2, "y")


@pytest.mark.parametrize("ddl, good, value, field, shown", [
    ("n int", 1, 2 ** 40, "n", 2 ** 40),
    ("n long", 1, 2 ** 70, "n", 2 ** 70),
    ("n tinyint", 1, 300, "n", 300),
    ("n decimal(10,2)", Decimal("1.5"), Decimal("123456789012.5"), "n",
     Decimal("123456789012.5")),
    ("n array<long>", [1], [1, "x"], "n[1]", "x"),
])
def test_out_of_range_emits_are_schema_errors_before_arrow_sees_them(ddl, good, value, field,
                                                                      shown):
    # they used to reach Arrow: an OverflowError or a conversion error naming no key
    schema = T.StructType.fromJson(parse_ddl(ddl).json_value())
    builder = OutputBuilder(["key"], schema, "s")
    with pytest.raises(SchemaError) as caught:
        builder.frame_of([("a", ("a",), [good]), ("b", ("b",), [good, value])])
    error = caught.value
    assert (error.step_id, error.key, error.field, error.value) == ("s", "b", field, shown)
