"""Cases every host must run the same way (issue 15: one semantics in one place).

Each case is a logic, one micro-batch of ``(key, value)`` items, the step
options and the outputs per key every host must give:
tests/unit/testing/test_cross_host.py runs them offline (restore "always" and
"on_crash", and bounded), tests/spark/hosts/test_cross_host_spark.py on Spark
(per-key and packed hosts, streaming and bounded).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Dict, List, Optional

import sparkwax as sw

from kit import T0

INPUT = "key string, ts timestamp, seq long, tag string"


class Tags(sw.StatefulLogic):
    """Emits each value's tag, in the order the host hands the values."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [value["tag"]], sw.RETAIN

    def snapshot(self):
        return None


def row(key: str, tag: str, seq: Optional[int] = 0, minute: Optional[int] = 0):
    ts = None if minute is None else T0 + timedelta(minutes=minute)
    return (key, {"ts": ts, "seq": seq, "tag": tag})


@dataclass
class Case:
    name: str
    items: List[tuple]
    expected: Dict[str, List[Any]]
    options: Dict[str, Any] = field(default_factory=dict)
    late: int = 0


CASES = [
    # order_by: nulls first, then ascending (unique values: Spark's shuffle has no
    # arrival order to keep stable)
    Case("order_by_nulls_first",
         [row("a", "three", 3), row("a", "null", None), row("a", "one", 1), row("b", "two", 2),
          row("b", "zero", 0)],
         {"a": ["null", "one", "three"], "b": ["zero", "two"]},
         {"order_by": "seq"}),
    # EventTime without order_by: event-time order; a null event time is late
    Case("event_time_order_and_null_event_time",
         [row("a", "at5", minute=5), row("a", "no-time", minute=None), row("a", "at1", minute=1),
          row("b", "at2", minute=2)],
         {"a": ["at1", "at5"], "b": ["at2"]},
         {"time": sw.EventTime("ts", watermark="10 minutes")}, late=1),
    # order_by beats the event time
    Case("order_by_over_event_time",
         [row("a", "second", 2, minute=1), row("a", "first", 1, minute=5)],
         {"a": ["first", "second"]},
         {"time": sw.EventTime("ts", watermark="10 minutes"), "order_by": "seq"}),
]


# --- the checks every host runs from the Step (issue 20's drift bugs) ---

BAD_TIMES = ["event", sw.EventTime, 5]   # not a time mode: a ConfigError on every entry point


class LockedAtEof(sw.StatefulLogic):
    """Counts and emits the count at EOF, then discards; its snapshot cannot be
    pickled, so the first commit a stream makes fails: bounded mode must fail
    too (it commits nothing when a key discards at EOF)."""

    def __init__(self, resume=None):
        self.n = 0

    def on_item(self, value):
        self.n += 1
        return [], sw.RETAIN

    def on_eof(self):
        return [self.n], sw.DISCARD

    def snapshot(self):
        return threading.Lock()


def builder_holding_a_lock():
    """A builder Spark cannot ship (its closure holds a lock)."""
    lock = threading.Lock()

    def build(resume=None):
        assert lock is not None
        return Tags(resume)
    return build


class TimerOutsideSnapshot(sw.StatefulLogic):
    """Keeps its next timer outside snapshot(): a rebuilt logic has another
    notify_at() than the one that committed (a LostStateWarning)."""

    def __init__(self, resume=None):
        self.count = resume or 0
        self.deadline = None

    def on_item(self, value):
        self.count += 1
        self.deadline = value["ts"] + timedelta(hours=1)
        return [], sw.RETAIN

    def notify_at(self):
        return self.deadline

    def on_eof(self):
        return [self.count], sw.DISCARD

    def snapshot(self):
        return self.count


# --- output schemas (issue 21): the one checker on every host ---
#
# DDL both parsers read (sparkwax.schema.parse_ddl, pyspark's StructType.fromDDL)
# to the same fields, types and nullability: every type sparkwax accepts, its
# aliases and the syntax around them.
DDL_CASES = [
    "a tinyint, b byte, c smallint, d short, e int, f integer, g bigint, h long",
    "a float, b real, c double",
    "a decimal(10,2), b numeric(5,1), c dec(3), d decimal, e numeric, f DECIMAL(38, 38), "
    "g decimal(38,0), h decimal( 4 , 2 )",
    "a boolean, b string, c binary, d date",
    "a timestamp, b timestamp_ltz, c timestamp_ntz, d timestamp without time zone",
    "a varchar(5), b char(3), c character(4)",
    "a array<int>, b array<array<string>>, c map<string, array<long>>, d map<int,double>",
    "a struct<x: int, y string NOT NULL>, b struct<>, c struct<`x y`: int, `z``q`: date>",
    "a array<struct<p: decimal(4,2), q: map<int, string>>>, "
    "b map<string, struct<c: array<timestamp> not null>>",
    "`a b` int NOT NULL, `we``ird` string not null, c int COMMENT 'hi', d long not null "
    "comment \"dq\"",
    "A Int, b STRING, C BigInt NOT NULL, d ARRAY<Map<String, Decimal(5,1)>>",
    "end timestamp, start timestamp, select int, from string, 1a long, _x double",
    "a: int, b: struct<c: long>",
    "  a   int  ,  b  long  ",
    "struct<a: int, b: string not null>",
]

# DDL both parsers refuse (sparkwax with a ConfigError naming the position)
DDL_REFUSED = ["a int,", "a int b int", "a decimal(39,0)", "a decimal(5,6)",
               "a array<int not null>", "a char", "a varchar", "a double precision",
               "a int default 5", "a map<int>", "a struct<a int", "", "a int NOT"]


class Emits(sw.StatefulLogic):
    """Emits the values its input's ``tag`` names in ``EMITS`` (any Python
    value: the input of a Spark test is JSON, the emits are not)."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return list(EMITS[value["tag"]]), sw.RETAIN

    def snapshot(self):
        return None


@dataclass
class EmitCase:
    """Key "a" emits ``good``; key "b" emits ``good`` then ``bad``, which must
    be a SchemaError naming step, key "b", ``field`` (None: the emit's shape)
    and ``value`` (compared by repr: NaN) on every host."""
    name: str
    schema: str
    good: Any
    bad: Any
    field: Optional[str]
    value: Any

    def items(self):
        return [row("a", f"{self.name}/good"), row("b", f"{self.name}/bad")]


_NAIVE = datetime(2024, 1, 1, 12, 0)
_DAY = datetime(2024, 1, 1).date()
_ORDER = {"sku": "a", "price": Decimal("1.00")}
_AFTER_2262 = datetime(2263, 1, 1, tzinfo=timezone.utc)
_BEFORE_1677 = datetime(1600, 1, 1, tzinfo=timezone.utc)
# the edges of an output timestamp (pandas' nanoseconds), odd microseconds
# beyond 2**53 µs from 1970, which a float64 would round
_LOW_EDGE = datetime(1677, 9, 21, 0, 12, 43, 145225, tzinfo=timezone.utc)
_HIGH_EDGE = datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=timezone.utc)

BAD_EMITS = [
    # the five that failed on Spark with an Arrow/OverflowError naming nothing
    EmitCase("int_2_40", "n int", 1, 2 ** 40, "n", 2 ** 40),
    EmitCase("long_2_70", "n long", 1, 2 ** 70, "n", 2 ** 70),
    EmitCase("tinyint_300", "n tinyint", 1, 300, "n", 300),
    EmitCase("decimal_precision", "n decimal(10,2)", Decimal("1.5"),
             Decimal("123456789012.5"), "n", Decimal("123456789012.5")),
    EmitCase("array_long_str", "n array<long>", [1], [1, "x"], "n[1]", "x"),
    # the matrix's offline-vs-Spark cases (they passed offline, failed on Spark)
    EmitCase("wrong_type", "n long", 1, "7", "n", "7"),
    EmitCase("wrong_type_string", "label string", "x", 5, "label", 5),
    EmitCase("missing_field", "n long, label string", {"n": 1, "label": "x"}, {"n": 2},
             "label", {"n": 2}),
    EmitCase("extra_field", "n long, label string", (1, "x"),
             {"n": 2, "label": "y", "extra": 3}, "extra", {"n": 2, "label": "y", "extra": 3}),
    EmitCase("tuple_too_short", "n long, label string", (1, "x"), (2,), None, (2,)),
    EmitCase("not_a_row", "n long, label string", (1, "x"), 5, None, 5),
    EmitCase("none_not_nullable", "n long NOT NULL, label string", (1, "x"), (None, "y"),
             "n", None),
    EmitCase("nan_not_nullable", "x double NOT NULL", 1.5, float("nan"), "x", float("nan")),
    EmitCase("naive_timestamp", "at timestamp", T0, _NAIVE, "at", _NAIVE),
    EmitCase("datetime_into_date", "day date", _DAY, _NAIVE, "day", _NAIVE),
    EmitCase("bool_into_int", "n int", 1, True, "n", True),
    EmitCase("float_into_long", "n long", 1, 1.5, "n", 1.5),
    EmitCase("tinyint_low", "n tinyint", -128, -129, "n", -129),
    EmitCase("smallint_high", "n smallint", 32767, 32768, "n", 32768),
    EmitCase("int_low", "n int", -2 ** 31, -2 ** 31 - 1, "n", -2 ** 31 - 1),
    EmitCase("long_2_63", "n bigint", 2 ** 63 - 1, 2 ** 63, "n", 2 ** 63),
    EmitCase("float32_overflow", "x float", 3.4e38, 1e39, "x", 1e39),
    EmitCase("int_into_double", "x double", 2 ** 53, 2 ** 53 + 1, "x", 2 ** 53 + 1),
    EmitCase("int_into_float", "x float", -2 ** 24, -2 ** 24 - 1, "x", -2 ** 24 - 1),
    EmitCase("decimal_scale", "n decimal(10,2)", Decimal("1.230"), Decimal("1.234"), "n",
             Decimal("1.234")),
    EmitCase("decimal_nan", "n decimal(10,2)", 5, Decimal("NaN"), "n", Decimal("NaN")),
    EmitCase("string_into_binary", "raw binary", b"x", "x", "raw", "x"),
    EmitCase("array_int_range", "items array<int>", [1, 2], [1, 2 ** 40], "items[1]", 2 ** 40),
    EmitCase("array_not_a_list", "items array<long>", [1], "12", "items", "12"),
    EmitCase("map_value", "tags map<string, int>", ({"a": 1},), ({"a": 1, "b": "x"},),
             "tags['b']", "x"),
    EmitCase("map_key", "tags map<string, int>", ({"a": 1},), ({7: 1},), "tags[7]", 7),
    EmitCase("struct_missing", "point struct<x: double, y: double>", ({"x": 1.0, "y": 2.0},),
             ({"x": 1.0},), "point.y", {"x": 1.0}),
    EmitCase("struct_type", "point struct<x: double, y: double>", ((1.0, 2.0),),
             ((1.0, "north"),), "point.y", "north"),
    EmitCase("struct_not_null", "point struct<x: double NOT NULL, y: double>", ((1.0, None),),
             ((None, 2.0),), "point.x", None),
    EmitCase("nested", "orders array<struct<sku: string, price: decimal(6,2)>>",
             ([_ORDER],), ([_ORDER, {"sku": "b", "price": Decimal("1.005")}],),
             "orders[1].price", Decimal("1.005")),
    EmitCase("nested_map_array", "m map<string, array<tinyint>>", ({"a": [1]},),
             ({"a": [1], "b": [2, 200]},), "m['b'][1]", 200),
    # the type edges (issue 32): passed offline, failed on Spark in pandas or Arrow
    EmitCase("timestamp_after_2262", "t timestamp", T0, _AFTER_2262, "t", _AFTER_2262),
    EmitCase("timestamp_before_1677", "t timestamp", T0, _BEFORE_1677, "t", _BEFORE_1677),
    EmitCase("timestamp_ntz_after_2262", "wall timestamp_ntz", _NAIVE,
             _AFTER_2262.replace(tzinfo=None), "wall", _AFTER_2262.replace(tzinfo=None)),
    EmitCase("timestamp_array_after_2262", "times array<timestamp>", [T0], [T0, _AFTER_2262],
             "times[1]", _AFTER_2262),
    EmitCase("lone_surrogate", "label string", "x", "a\ud800", "label", "a\ud800"),
    EmitCase("lone_surrogate_map_key", "tags map<string, int>", ({"a": 1},),
             ({"\udc00": 1},), "tags['\\udc00']", "\udc00"),
    EmitCase("lone_surrogate_struct", "point struct<name: string, x: double>",
             (("a", 1.0),), (("\udfff", 1.0),), "point.name", "\udfff"),
]

# Good emits of every type: key "a" the low edges, "b" the high ones, "c" the
# nulls and empty containers; every host must give them back the same.
GOOD_SCHEMA = ("b tinyint, s smallint, i int, l bigint, f float, d double, "
               "dec decimal(10,2), flag boolean, name string, raw binary, day date, "
               "at timestamp, wall timestamp_ntz, items array<long>, tags map<string, int>, "
               "point struct<x: double, y: double NOT NULL>, "
               "orders array<struct<sku: string, price: decimal(4,2), "
               "extra map<string, array<int>>>>, times array<timestamp>")
GOOD_EMITS = {
    "a": {"b": -128, "s": -32768, "i": -2 ** 31, "l": -2 ** 63, "f": -3.4028234663852886e38,
          "d": -1e308, "dec": Decimal("-99999999.99"), "flag": False, "name": "",
          "raw": b"", "day": datetime(1, 1, 1).date(),
          "at": _LOW_EDGE,
          "wall": datetime(2024, 1, 1, 12, 30), "items": [], "tags": {},
          "point": {"x": None, "y": -0.0}, "orders": [], "times": []},
    "b": (127, 32767, 2 ** 31 - 1, 2 ** 63 - 1, 0.5, 2 ** 53, 99999999,
          True, "spark ✓", bytearray(b"\x00\xff"), datetime(9999, 12, 31).date(),
          _HIGH_EDGE.astimezone(timezone(timedelta(hours=2))),
          datetime(2024, 1, 1), [1, -(2 ** 63), 2 ** 63 - 1], {"a": 1, "b": None},
          (1.5, 2.5),
          [{"sku": "x", "price": Decimal("99.99"), "extra": {"k": [1, None]}},
           ("y", Decimal("0.5"), None)],
          [datetime(2024, 6, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5))), T0,
           datetime(2260, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)]),
    "c": {"b": None, "s": None, "i": None, "l": None, "f": None, "d": None, "dec": None,
          "flag": None, "name": None, "raw": None, "day": None, "at": None, "wall": None,
          "items": [None], "tags": {"n": None}, "point": None, "orders": [None],
          "times": [None]},
}

# The cases (the five unnamed Spark failures, the twelve that passed
# offline and failed on Spark) also run as streaming queries; the rest in
# bounded mode on Spark (the same OutputBuilder builds both hosts' frames).
STREAMED = ("int_2_40", "long_2_70", "tinyint_300", "decimal_precision", "array_long_str",
            "wrong_type", "wrong_type_string", "missing_field", "extra_field",
            "none_not_nullable", "naive_timestamp", "bool_into_int", "float_into_long",
            "tinyint_low", "smallint_high", "int_low", "long_2_63", "timestamp_after_2262",
            "lone_surrogate")

EMITS: Dict[str, List[Any]] = {}
for _case in BAD_EMITS:
    EMITS[f"{_case.name}/good"] = [_case.good]
    EMITS[f"{_case.name}/bad"] = [_case.good, _case.bad]
for _key, _emit in GOOD_EMITS.items():
    EMITS[f"good/{_key}"] = [_emit, _emit]

GOOD_ITEMS = [row(key, f"good/{key}") for key in GOOD_EMITS]


def normalized(kind, value):
    """A value of Spark type ``kind`` (a ``sparkwax.schema`` type) as every host
    must give it back: structs as tuples, arrays as lists, binary as bytes,
    timestamps aware in UTC (timestamp_ntz naive), floats at 32-bit precision."""
    import struct

    from sparkwax import schema as S

    if value is None:
        return None
    if isinstance(kind, S.StructType):
        items = ([value[f.name] for f in kind.fields] if isinstance(value, dict)
                 else list(value))
        return tuple(normalized(f.type, item) for f, item in zip(kind.fields, items))
    if isinstance(kind, S.ArrayType):
        return [normalized(kind.element, item) for item in value]
    if isinstance(kind, S.MapType):
        return {normalized(kind.key, k): normalized(kind.value, v) for k, v in value.items()}
    if isinstance(kind, S.TimestampType):
        if kind.ntz:
            return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo \
                else value
        return value.astimezone(timezone.utc) if value.tzinfo else value.replace(
            tzinfo=timezone.utc)  # Spark hands back naive UTC (local_session runs in UTC)
    if isinstance(kind, S.BinaryType):
        return bytes(value)
    if kind == S.FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    if kind == S.DOUBLE:
        return float(value)
    if isinstance(kind, S.DecimalType):
        return Decimal(value)
    return value


def normalized_rows(schema: str, rows):
    """``(key, emit)`` rows (an emit in any shape) as ``{key: [tuple, ...]}``."""
    from sparkwax.schema import OutputSchema

    checker = OutputSchema.of(schema)
    grouped: Dict[Any, List[Any]] = {}
    for key, emit in rows:
        values = checker.row(emit)
        grouped.setdefault(key, []).append(tuple(
            normalized(f.type, v) for f, v in zip(checker.fields, values)))
    return grouped
