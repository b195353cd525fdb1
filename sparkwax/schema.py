"""Output schemas without a JVM: Spark's types, their DDL, and the one output
checker every host runs.

``parse_ddl`` reads what ``pyspark.sql.types.StructType.fromDDL`` reads for the
types sparkwax supports; ``struct_of`` also takes a pyspark ``StructType``
(read through its ``jsonValue()``, so this module never imports pyspark).
``OutputSchema`` checks emits against a schema: the offline runner calls
``check`` after each activation, the Spark hosts call ``columns``, ``column_ok`` and ``raise_first``
column by column as they build their output frames, so both raise the same
``SchemaError`` (step, key, field path and the offending value).

>>> schema = parse_ddl("n int, items array<struct<price: decimal(6,2), sku string>>")
>>> schema.simple_string()
'struct<n:int,items:array<struct<price:decimal(6,2),sku:string>>>'
>>> from decimal import Decimal
>>> checker = OutputSchema.of(schema, "orders")
>>> checker.check("orders", "alice", [(1, [{"price": Decimal("9.99"), "sku": "a"}])])
>>> checker.check("orders", "bob", [{"n": 2, "items": [(Decimal("1.5"), "b"),
...                                                      (Decimal("0.125"), "c")]}])
Traceback (most recent call last):
...
sparkwax.errors.SchemaError: step 'orders', key 'bob', output field 'items[1].price': does not fit decimal(6,2): more than 2 digits after the point (got Decimal('0.125'))
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from dataclasses import dataclass, fields as dataclass_fields, is_dataclass
from functools import lru_cache
from itertools import chain
from operator import itemgetter, methodcaller
from typing import (Any, Callable, Dict, Iterator, List, NoReturn, Optional, Sequence, Set,
                    Tuple)

from .errors import ConfigError, SchemaError

__all__ = [
    "ArrayType", "BINARY", "BIGINT", "BOOLEAN", "BinaryType", "BooleanType", "CharType", "DATE",
    "DOUBLE", "DateType", "DecimalType", "FLOAT", "FractionalType", "INT", "IntegralType",
    "MapType", "OutputSchema", "SMALLINT", "STRING", "SqlType", "StringType", "StructField",
    "StructType", "TIMESTAMP", "TIMESTAMP_NTZ", "TINYINT", "TimestampType", "parse_ddl",
    "parse_type", "struct_of", "type_of_json",
]

Misfit = Tuple[str, Any, str]
"""Why a value does not fit: (path below the value, the offending value, reason)."""

_NONE = type(None)
_INT_ONLY = frozenset({int})
_INT_NONE = frozenset({int, _NONE})
_INT64 = (-(1 << 63), (1 << 63) - 1)
_F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_utcoffset = methodcaller("utcoffset")


# numpy values are recognised by their type's module (the core never imports numpy)
def _numpy_bool(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def _numpy_int(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and "int" in kind.__name__


def _numpy_float(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and "float" in kind.__name__


def _numpy_vector(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ == "ndarray" and value.ndim == 1


def _kind_name(value: Any) -> str:
    return type(value).__name__


def _present(values: List[Any], types: Set[type]) -> List[Any]:
    return [v for v in values if v is not None] if _NONE in types else values


# --- the type model -----------------------------------------------------------


class SqlType:
    """A Spark SQL type sparkwax knows, with its check.

    ``ok(values, nullable)`` says whether every value of a column fits (fast:
    type sets and min/max in C where it can); ``misfit(value)`` says why one
    non-null value does not (slow, only asked once ``ok`` said no)."""

    def simple_string(self) -> str:
        raise NotImplementedError

    def json_value(self) -> Any:
        """The type as pyspark's ``DataType.jsonValue()`` writes it (no metadata)."""
        return self.simple_string()

    def is_null(self, value: Any) -> bool:
        """A value Spark stores as null: None (and NaN for float/double)."""
        return value is None

    def fits(self, value: Any) -> bool:
        """Whether one non-null value fits."""
        return self.misfit(value) is None

    def misfit(self, value: Any) -> Optional[Misfit]:
        raise NotImplementedError

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        """Whether every value fits (nulls only if ``nullable``); ``types``:
        ``set(map(type, values))`` if the caller has it already."""
        return self._each(values, nullable)

    def _each(self, values: Sequence[Any], nullable: bool) -> bool:
        is_null, fits = self.is_null, self.fits
        for value in values:
            if is_null(value):
                if not nullable:
                    return False
            elif not fits(value):
                return False
        return True

    def _wrong(self, value: Any, expected: str) -> Misfit:
        return ("", value, f"does not fit {self.simple_string()}: expected {expected}, "
                           f"not {_kind_name(value)}")

    def __str__(self) -> str:
        return self.simple_string()


@dataclass(frozen=True)
class IntegralType(SqlType):
    """tinyint, smallint, int, bigint: Python ints (numpy ints too) in range."""

    name: str
    bits: int

    @property
    def low(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def high(self) -> int:
        return (1 << (self.bits - 1)) - 1

    def simple_string(self) -> str:
        return self.name

    def json_value(self) -> Any:
        return {"tinyint": "byte", "smallint": "short", "int": "integer",
                "bigint": "long"}[self.name]

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        if not values:
            return True
        kinds = set(map(type, values)) if types is None else types
        if kinds == _INT_ONLY:
            return bool(self.low <= min(values) and max(values) <= self.high)
        if kinds == _INT_NONE:
            if not nullable:
                return False
            present = [v for v in values if v is not None]
            return bool(self.low <= min(present) and max(present) <= self.high)
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        if type(value) is int or (_numpy_int(value)):
            return self.low <= int(value) <= self.high
        return False

    def misfit(self, value: Any) -> Optional[Misfit]:
        if self.fits(value):
            return None
        if type(value) is int or _numpy_int(value):
            return ("", value, f"out of range for {self.name} ({self.low}..{self.high})")
        return self._wrong(value, "an int")


@dataclass(frozen=True)
class FractionalType(SqlType):
    """float (32-bit) and double: floats, ints that the type holds exactly
    (Arrow's safe cast refuses others: up to ±2**24 for float, ±2**53 for
    double), numpy numbers. NaN is stored as null on Spark."""

    name: str

    @property
    def int_limit(self) -> int:
        return 1 << (24 if self.name == "float" else 53)

    def simple_string(self) -> str:
        return self.name

    def is_null(self, value: Any) -> bool:
        if value is None:
            return True
        if isinstance(value, float) or _numpy_float(value):
            return bool(value != value)
        return False

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if _NONE in kinds and not nullable:
            return False
        if kinds <= {float, _NONE}:
            present = _present(values, kinds)
            if not nullable and any(map(math.isnan, present)):
                return False
            if self.name == "float" and present and not (
                    -_F32_MAX <= min(present) and max(present) <= _F32_MAX):
                return self._each(present, nullable)  # inf, NaN or an overflow: one by one
            return True
        if kinds <= _INT_NONE:
            present = _present(values, kinds)
            limit = self.int_limit
            return not present or bool(-limit <= min(present) and max(present) <= limit)
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        kind = type(value)
        if kind is float or _numpy_float(value):
            return self.name == "double" or _fits_float32(float(value))
        if kind is int or _numpy_int(value):
            return -self.int_limit <= int(value) <= self.int_limit
        return False

    def misfit(self, value: Any) -> Optional[Misfit]:
        if self.fits(value):
            return None
        kind = type(value)
        if kind is int or _numpy_int(value):
            power = 24 if self.name == "float" else 53
            return ("", value, f"does not fit {self.name}: an int beyond ±2**{power} is not "
                               f"exact as a {self.name} (Arrow refuses it); emit float(value)")
        if kind is float or _numpy_float(value):
            return ("", value, "out of range for float (32-bit, up to ±3.4028235e38): "
                               "use double")
        return self._wrong(value, "a float or an int")


def _fits_float32(value: float) -> bool:
    try:
        struct.pack("<f", value)
    except OverflowError:
        return False
    return True


@dataclass(frozen=True)
class DecimalType(SqlType):
    """decimal(p, s): ``decimal.Decimal`` with at most ``s`` digits after the
    point (trailing zeros aside) and ``p - s`` before it, or an int that fits."""

    precision: int = 10
    scale: int = 0

    def simple_string(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if _NONE in kinds and not nullable:
            return False
        if not kinds - {decimal.Decimal, _NONE}:  # in C: min/max, quantize, list ==
            present = _present(values, kinds)
            if not present:
                return True
            bound = _decimal_bound(self.precision - self.scale)
            try:
                return bool(-bound < min(present) and max(present) < bound and list(
                    map(_quantizer(self.scale), present)) == present)
            except ArithmeticError:  # NaN, a value beyond the context's precision...
                pass
        elif not kinds - {int, _NONE}:
            present = _present(values, kinds)
            if not present:
                return True
            limit = 10 ** (self.precision - self.scale) - 1
            low, high = max(-limit, _INT64[0]), min(limit, _INT64[1])
            return bool(low <= min(present) and max(present) <= high)
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return self.misfit(value) is None

    def misfit(self, value: Any) -> Optional[Misfit]:
        if isinstance(value, decimal.Decimal):
            return self._decimal(value)
        if type(value) is int:
            if not _INT64[0] <= value <= _INT64[1]:
                return ("", value, f"does not fit {self.simple_string()}: an int beyond 64 "
                                   "bits does not convert on Spark; emit a Decimal")
            if abs(value) >= 10 ** (self.precision - self.scale):
                return ("", value, f"does not fit {self.simple_string()}: more than "
                                   f"{self.precision - self.scale} digits before the point")
            return None
        return self._wrong(value, "a Decimal or an int")

    def _decimal(self, value: decimal.Decimal) -> Optional[Misfit]:
        shown = self.simple_string()
        if not value.is_finite():
            return ("", value, f"does not fit {shown}: not a finite number")
        _, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        if not any(digits):
            return None  # a zero, whatever its exponent
        shift = exponent + self.scale  # the value is digits * 10**(shift - scale)
        count = len(digits)
        if shift < 0:  # digits after the point beyond the scale: zeros only
            if _trailing_zeros(digits) < -shift:
                return ("", value, f"does not fit {shown}: more than {self.scale} digits "
                                   "after the point")
        if count + shift > self.precision:
            return ("", value, f"does not fit {shown}: more than "
                               f"{self.precision - self.scale} digits before the point")
        return None


@lru_cache(maxsize=None)
def _decimal_bound(digits: int) -> decimal.Decimal:
    return decimal.Decimal(10) ** digits


@lru_cache(maxsize=None)
def _quantizer(scale: int) -> Callable[[decimal.Decimal], decimal.Decimal]:
    """``d -> d`` rounded to ``scale`` digits after the point (equal to ``d``
    exactly when ``d`` has no more digits than that)."""
    return methodcaller("quantize", decimal.Decimal(1).scaleb(-scale))


def _trailing_zeros(digits: Tuple[int, ...]) -> int:
    count = 0
    for digit in reversed(digits):
        if digit:
            break
        count += 1
    return count


@dataclass(frozen=True)
class BooleanType(SqlType):
    def simple_string(self) -> str:
        return "boolean"

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if kinds <= {bool, _NONE}:
            return nullable or _NONE not in kinds
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return type(value) is bool or _numpy_bool(value)

    def misfit(self, value: Any) -> Optional[Misfit]:
        return None if self.fits(value) else self._wrong(value, "a bool")


class _ByType(SqlType):
    """A type whose values are checked by their Python type only."""

    exact: frozenset[type] = frozenset()
    accepted: Tuple[type, ...] = ()
    expected = ""

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if kinds <= self.exact:
            return True
        if kinds <= self.exact | {_NONE}:
            return nullable
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return isinstance(value, self.accepted)

    def misfit(self, value: Any) -> Optional[Misfit]:
        return None if self.fits(value) else self._wrong(value, self.expected)


@dataclass(frozen=True)
class StringType(_ByType):
    exact = frozenset({str})
    accepted = (str,)
    expected = "a str"

    def simple_string(self) -> str:
        return "string"


@dataclass(frozen=True)
class CharType(SqlType):
    """varchar(n) and char(n): parsed as Spark does, refused as output types
    (Spark's applyInPandas refuses them; use string)."""

    name: str
    length: int

    def simple_string(self) -> str:
        return f"{self.name}({self.length})"

    def misfit(self, value: Any) -> Optional[Misfit]:
        return ("", value, f"{self.simple_string()} is not an output type on Spark")


@dataclass(frozen=True)
class BinaryType(_ByType):
    exact = frozenset({bytes, bytearray})
    accepted = (bytes, bytearray)
    expected = "bytes"

    def simple_string(self) -> str:
        return "binary"


@dataclass(frozen=True)
class DateType(_ByType):
    exact = frozenset({dt.date})
    accepted = (dt.date,)
    expected = "a date"

    def simple_string(self) -> str:
        return "date"

    def fits(self, value: Any) -> bool:
        return isinstance(value, dt.date) and not isinstance(value, dt.datetime)

    def misfit(self, value: Any) -> Optional[Misfit]:
        if isinstance(value, dt.datetime):
            return ("", value, "does not fit date: a datetime, not a date (emit .date())")
        return super().misfit(value)


@dataclass(frozen=True)
class TimestampType(SqlType):
    """timestamp: an aware datetime (naive ones are refused: Spark would read
    them in the session's time zone); timestamp_ntz: any datetime."""

    ntz: bool = False

    def simple_string(self) -> str:
        return "timestamp_ntz" if self.ntz else "timestamp"

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if kinds <= {dt.datetime, _NONE}:
            if _NONE in kinds:
                if not nullable:
                    return False
                values = [v for v in values if v is not None]
            return self.ntz or None not in list(map(_utcoffset, values))
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return isinstance(value, dt.datetime) and (self.ntz or value.utcoffset() is not None)

    def misfit(self, value: Any) -> Optional[Misfit]:
        if self.fits(value):
            return None
        if isinstance(value, dt.datetime):
            return ("", value, "does not fit timestamp: naive datetime: emit an aware one, "
                               "e.g. tzinfo=timezone.utc")
        return self._wrong(value, "a datetime")


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple)) or _numpy_vector(value)


@dataclass(frozen=True)
class ArrayType(SqlType):
    """array<element>: a list, tuple or 1-d numpy array; elements checked
    recursively (all elements of a column at once)."""

    element: SqlType
    contains_null: bool = True

    def simple_string(self) -> str:
        return f"array<{self.element.simple_string()}>"

    def json_value(self) -> Any:
        return {"type": "array", "elementType": self.element.json_value(),
                "containsNull": self.contains_null}

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if _NONE in kinds and not nullable:
            return False
        if kinds <= {list, tuple, _NONE}:
            elements = list(chain.from_iterable(_present(values, kinds)))
            return self.element.ok(elements, self.contains_null)
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return _is_array(value) and self.element.ok(list(value), self.contains_null)

    def misfit(self, value: Any) -> Optional[Misfit]:
        if not _is_array(value):
            return self._wrong(value, "a list or tuple")
        element = self.element
        for index, item in enumerate(value):
            if element.is_null(item):
                if not self.contains_null:
                    return (f"[{index}]", item, "None in an array without nulls")
                continue
            found = element.misfit(item)
            if found is not None:
                return (f"[{index}]{found[0]}", found[1], found[2])
        return None


@dataclass(frozen=True)
class MapType(SqlType):
    """map<key, value>: a dict; keys never null, both checked recursively."""

    key: SqlType
    value: SqlType
    value_contains_null: bool = True

    def simple_string(self) -> str:
        return f"map<{self.key.simple_string()},{self.value.simple_string()}>"

    def json_value(self) -> Any:
        return {"type": "map", "keyType": self.key.json_value(),
                "valueType": self.value.json_value(),
                "valueContainsNull": self.value_contains_null}

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if _NONE in kinds and not nullable:
            return False
        if kinds <= {dict, _NONE}:
            present = _present(values, kinds)
            return (self.key.ok(list(chain.from_iterable(present)), False) and
                    self.value.ok(list(chain.from_iterable(map(dict.values, present))),
                                  self.value_contains_null))
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return isinstance(value, dict) and self.key.ok(list(value), False) and self.value.ok(
            list(value.values()), self.value_contains_null)

    def misfit(self, value: Any) -> Optional[Misfit]:
        if not isinstance(value, dict):
            return self._wrong(value, "a dict")
        for key, item in value.items():
            where = f"[{key!r}]"
            if self.key.is_null(key):
                return (where, key, "a null map key")
            found = self.key.misfit(key)
            if found is not None:
                return (where, key, f"map key {found[2]}")
            if self.value.is_null(item):
                if not self.value_contains_null:
                    return (where, item, "None in a map without null values")
                continue
            found = self.value.misfit(item)
            if found is not None:
                return (f"{where}{found[0]}", found[1], found[2])
        return None


@dataclass(frozen=True)
class StructField:
    name: str
    type: SqlType
    nullable: bool = True

    def json_value(self) -> Dict[str, Any]:
        return {"name": self.name, "type": self.type.json_value(), "nullable": self.nullable}

    def misfit(self, value: Any) -> Optional[Misfit]:
        """Why ``value`` does not fit this field (path from the field's name)."""
        if self.type.is_null(value):
            if self.nullable:
                return None
            what = "None" if value is None else "NaN (stored as null)"
            return (self.name, value, f"{what} for a non-nullable field")
        found = self.type.misfit(value)
        if found is None:
            return None
        return (f"{self.name}{found[0]}", found[1], found[2])


@dataclass(frozen=True)
class StructType(SqlType):
    """struct<...>: as a nested value, a dict with exactly its fields or a
    tuple (a Row, a namedtuple) with one value per field, by position."""

    fields: Tuple[StructField, ...] = ()

    @property
    def names(self) -> List[str]:
        return [f.name for f in self.fields]

    def simple_string(self) -> str:
        inner = ",".join(f"{f.name}:{f.type.simple_string()}" for f in self.fields)
        return f"struct<{inner}>"

    def ddl(self) -> str:
        """The fields as DDL (``"`a` int NOT NULL, `b` string"``)."""
        return ", ".join(f"{_quote(f.name)} {_ddl_type(f.type)}"
                         f"{'' if f.nullable else ' NOT NULL'}" for f in self.fields)

    def json_value(self) -> Any:
        return {"type": "struct", "fields": [f.json_value() for f in self.fields]}

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if _NONE in kinds and not nullable:
            return False
        present = _present(values, kinds)
        width = len(self.fields)
        getters: Sequence[Callable[[Any], Any]]
        if kinds <= {dict, _NONE}:
            names = dict.fromkeys(self.names).keys()
            if not all(map(names.__eq__, map(dict.keys, present))):
                return False
            getters = [itemgetter(name) for name in self.names]
        elif kinds <= {tuple, _NONE}:
            if set(map(len, present)) - {width}:
                return False
            getters = [itemgetter(index) for index in range(width)]
        else:
            return self._each(values, nullable)
        return all(field.type.ok(list(map(getter, present)), field.nullable)
                   for field, getter in zip(self.fields, getters))

    def fits(self, value: Any) -> bool:
        return self.misfit(value) is None

    def misfit(self, value: Any) -> Optional[Misfit]:
        if isinstance(value, dict):
            wrong = _dict_fields(value, self.names)
            if wrong is not None:
                return (f".{wrong[0]}", value, wrong[1])
            items = [value[name] for name in self.names]
        elif isinstance(value, tuple):
            if len(value) != len(self.fields):
                return ("", value, f"a tuple for {self.simple_string()} needs "
                                   f"{len(self.fields)} values")
            items = list(value)
        else:
            hint = " (a dataclass: emit dataclasses.asdict(value))" if is_dataclass(
                value) else ""
            return self._wrong(value, "a dict or a tuple" + hint)
        for field, item in zip(self.fields, items):
            found = field.misfit(item)
            if found is not None:
                return (f".{found[0]}", found[1], found[2])
        return None


def _dict_fields(value: Dict[Any, Any], names: List[str]) -> Optional[Tuple[str, str]]:
    """``(field, reason)`` when a dict's keys are not exactly ``names``."""
    missing = [n for n in names if n not in value]
    extra = [n for n in value if n not in names]
    if not missing and not extra:
        return None
    detail = "; ".join(part for part in (
        f"missing field(s) {missing}" if missing else "",
        f"unknown field(s) {extra}" if extra else "") if part)
    return (str(missing[0] if missing else extra[0]),
            f"does not match the schema's fields {names}: {detail}")


TINYINT = IntegralType("tinyint", 8)
SMALLINT = IntegralType("smallint", 16)
INT = IntegralType("int", 32)
BIGINT = IntegralType("bigint", 64)
FLOAT = FractionalType("float")
DOUBLE = FractionalType("double")
BOOLEAN = BooleanType()
STRING = StringType()
BINARY = BinaryType()
DATE = DateType()
TIMESTAMP = TimestampType()
TIMESTAMP_NTZ = TimestampType(ntz=True)

_SIMPLE: Dict[str, SqlType] = {
    "boolean": BOOLEAN, "tinyint": TINYINT, "byte": TINYINT, "smallint": SMALLINT,
    "short": SMALLINT, "int": INT, "integer": INT, "bigint": BIGINT, "long": BIGINT,
    "float": FLOAT, "real": FLOAT, "double": DOUBLE, "string": STRING, "binary": BINARY,
    "date": DATE, "timestamp": TIMESTAMP, "timestamp_ltz": TIMESTAMP,
    "timestamp_ntz": TIMESTAMP_NTZ,
}
SUPPORTED = ("tinyint/byte, smallint/short, int/integer, bigint/long, float/real, double, "
             "decimal(p,s)/dec/numeric, boolean, string, binary, date, timestamp "
             "(timestamp_ltz), timestamp_ntz, array<t>, map<k,v>, struct<name: t, ...>")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _ddl_type(kind: SqlType) -> str:
    if isinstance(kind, StructType):
        inner = ", ".join(f"{_quote(f.name)}: {_ddl_type(f.type)}"
                          f"{'' if f.nullable else ' NOT NULL'}" for f in kind.fields)
        return f"struct<{inner}>"
    if isinstance(kind, ArrayType):
        return f"array<{_ddl_type(kind.element)}>"
    if isinstance(kind, MapType):
        return f"map<{_ddl_type(kind.key)}, {_ddl_type(kind.value)}>"
    return kind.simple_string()


# --- DDL --------------------------------------------------------------------

_TOKENS = re.compile(r"""
    (?P<space>\s+)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<text>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<word>[A-Za-z0-9_]+)
  | (?P<punct>[<>(),:])
""", re.VERBOSE | re.DOTALL)


class _Tokens:
    """DDL tokens as (kind, text, position)."""

    def __init__(self, text: str):
        self.text = text
        self.items: List[Tuple[str, str, int]] = []
        position = 0
        while position < len(text):
            match = _TOKENS.match(text, position)
            if match is None:
                self.fail(f"unexpected character {text[position]!r}", position)
            kind = match.lastgroup or ""
            if kind != "space":
                self.items.append((kind, match.group(), position))
            position = match.end()
        self.index = 0

    def fail(self, reason: str, position: Optional[int] = None) -> NoReturn:
        if position is None:
            position = (self.items[self.index][2] if self.index < len(self.items)
                        else len(self.text))
        raise ConfigError(f"cannot parse the schema {self.text!r}: {reason} at position "
                          f"{position} ({self.text[position:position + 20]!r})")

    def peek(self, offset: int = 0) -> Tuple[str, str, int]:
        at = self.index + offset
        return self.items[at] if at < len(self.items) else ("end", "", len(self.text))

    def word(self, *expected: str) -> bool:
        """Consume the next token if it is one of these words (any case)."""
        kind, text, _ = self.peek()
        if kind == "word" and text.lower() in expected:
            self.index += 1
            return True
        return False

    def punct(self, symbol: str) -> bool:
        kind, text, _ = self.peek()
        if kind == "punct" and text == symbol:
            self.index += 1
            return True
        return False

    def expect(self, symbol: str) -> None:
        if not self.punct(symbol):
            self.fail(f"expected {symbol!r}")

    def number(self) -> int:
        kind, text, _ = self.peek()
        if kind != "word" or not text.isdigit():
            self.fail("expected a number")
        self.index += 1
        return int(text)

    def at_end(self) -> bool:
        return self.index >= len(self.items)


def parse_ddl(text: str) -> StructType:
    """Fields as DDL (``"a int NOT NULL, b array<string>"``, names may be
    backquoted, ``:`` after a name is optional, ``COMMENT '...'`` is read and
    dropped) or one ``struct<...>``, as ``StructType.fromDDL`` reads them.

    >>> parse_ddl("`user id` bigint NOT NULL, tags map<string, int>").simple_string()
    'struct<user id:bigint,tags:map<string,int>>'
    >>> parse_ddl("n long,")
    Traceback (most recent call last):
    ...
    sparkwax.errors.ConfigError: cannot parse the schema 'n long,': expected a field name at position 7 ('')
    """
    if not isinstance(text, str):
        raise ConfigError(f"a DDL schema must be a string, got {text!r}")
    tokens = _Tokens(text)
    if tokens.at_end():
        tokens.fail("expected fields")
    if tokens.peek()[1].lower() == "struct" and tokens.peek(1)[1] == "<":
        parsed = _type(tokens)
        assert isinstance(parsed, StructType)
    else:
        fields = [_field(tokens)]
        while tokens.punct(","):
            fields.append(_field(tokens))
        parsed = StructType(tuple(fields))
    if not tokens.at_end():
        tokens.fail("expected ',' or the end")
    return parsed


def parse_type(text: str) -> SqlType:
    """One type as DDL (``"array<decimal(10,2)>"``)."""
    tokens = _Tokens(text)
    parsed = _type(tokens)
    if not tokens.at_end():
        tokens.fail("expected the end")
    return parsed


def _name(tokens: _Tokens) -> str:
    kind, text, _ = tokens.peek()
    if kind == "quoted":
        tokens.index += 1
        return text[1:-1].replace("``", "`")
    if kind == "word" and not text.isdigit():
        tokens.index += 1
        return text
    tokens.fail("expected a field name")


def _field(tokens: _Tokens) -> StructField:
    name = _name(tokens)
    tokens.punct(":")
    kind = _type(tokens)
    nullable = True
    if tokens.word("not"):
        if not tokens.word("null"):
            tokens.fail("expected NULL after NOT")
        nullable = False
    if tokens.word("comment"):
        if tokens.peek()[0] != "text":
            tokens.fail("expected a quoted comment")
        tokens.index += 1
    return StructField(name, kind, nullable)


def _type(tokens: _Tokens) -> SqlType:
    kind, text, position = tokens.peek()
    if kind != "word":
        tokens.fail("expected a type")
    word = text.lower()
    tokens.index += 1
    if word == "timestamp" and tokens.word("without"):
        if not (tokens.word("time") and tokens.word("zone")):
            tokens.fail("expected TIME ZONE")
        return TIMESTAMP_NTZ
    if word in _SIMPLE:
        if word == "string" and tokens.word("collate"):
            tokens.fail("collations are not supported in a sparkwax schema")
        return _SIMPLE[word]
    if word in ("decimal", "dec", "numeric"):
        precision, scale = 10, 0
        if tokens.punct("("):
            precision = tokens.number()
            if tokens.punct(","):
                scale = tokens.number()
            tokens.expect(")")
        if precision > 38:
            tokens.fail(f"decimal precision {precision} exceeds the maximum 38", position)
        if scale > precision:
            tokens.fail(f"decimal scale {scale} exceeds its precision {precision}", position)
        return DecimalType(precision, scale)
    if word in ("varchar", "char", "character"):
        tokens.expect("(")
        length = tokens.number()
        tokens.expect(")")
        return CharType("varchar" if word == "varchar" else "char", length)
    if word == "array":
        tokens.expect("<")
        element = _type(tokens)
        tokens.expect(">")
        return ArrayType(element)
    if word == "map":
        tokens.expect("<")
        key = _type(tokens)
        tokens.expect(",")
        value = _type(tokens)
        tokens.expect(">")
        return MapType(key, value)
    if word == "struct":
        tokens.expect("<")
        fields: List[StructField] = []
        if not tokens.punct(">"):
            fields.append(_field(tokens))
            while tokens.punct(","):
                fields.append(_field(tokens))
            tokens.expect(">")
        return StructType(tuple(fields))
    tokens.fail(f"type {text!r} is not supported (sparkwax output schemas take {SUPPORTED})",
                position)


# --- pyspark's types, read through jsonValue() ---------------------------------

_JSON_SIMPLE: Dict[str, SqlType] = {
    "boolean": BOOLEAN, "byte": TINYINT, "short": SMALLINT, "integer": INT, "long": BIGINT,
    "float": FLOAT, "double": DOUBLE, "string": STRING, "binary": BINARY, "date": DATE,
    "timestamp": TIMESTAMP, "timestamp_ntz": TIMESTAMP_NTZ,
}
_JSON_SIZED = re.compile(r"(decimal|varchar|char)\((\d+)(?:,\s*(\d+))?\)$")


def type_of_json(value: Any) -> SqlType:
    """A type from pyspark's ``DataType.jsonValue()`` (Spark's JSON schema)."""
    if isinstance(value, str):
        if value in _JSON_SIMPLE:
            return _JSON_SIMPLE[value]
        if value == "decimal":
            return DecimalType()
        sized = _JSON_SIZED.match(value)
        if sized:
            if sized.group(1) == "decimal":
                return DecimalType(int(sized.group(2)), int(sized.group(3) or 0))
            return CharType(sized.group(1), int(sized.group(2)))
        raise ConfigError(f"type {value!r} is not supported (sparkwax output schemas take "
                          f"{SUPPORTED})")
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "array":
            return ArrayType(type_of_json(value["elementType"]),
                             bool(value.get("containsNull", True)))
        if kind == "map":
            return MapType(type_of_json(value["keyType"]), type_of_json(value["valueType"]),
                           bool(value.get("valueContainsNull", True)))
        if kind == "struct":
            return StructType(tuple(
                StructField(str(f["name"]), type_of_json(f["type"]),
                            bool(f.get("nullable", True)))
                for f in value.get("fields", ())))
    raise ConfigError(f"type {value!r} is not supported (sparkwax output schemas take "
                      f"{SUPPORTED})")


def struct_of(schema: Any) -> StructType:
    """A schema given as DDL, a ``StructType`` of this module, or anything
    with pyspark's ``jsonValue()`` (a pyspark ``StructType``, classic or
    Connect), as a ``StructType`` of this module."""
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        return _parsed(schema)
    json_value = getattr(schema, "jsonValue", None)
    if callable(json_value):
        converted = type_of_json(json_value())
        if isinstance(converted, StructType):
            return converted
    raise ConfigError(f"a schema must be a DDL string or a StructType, got {schema!r}")


@lru_cache(maxsize=256)
def _parsed(text: str) -> StructType:
    return parse_ddl(text)


# --- the output checker ---------------------------------------------------------


_TUPLE = frozenset({tuple})
_DICT = frozenset({dict})
# Emits of these exact types are the value of a one-field schema as they are.
_PLAIN = frozenset({int, float, str, bool, bytes, _NONE, dt.datetime, dt.date, decimal.Decimal})


class _RowMisfit(Exception):
    """An emit whose shape does not fit (raised by ``OutputSchema.row``)."""

    def __init__(self, field: Optional[str], value: Any, reason: str):
        super().__init__(reason)
        self.field, self.value, self.reason = field, value, reason


def _unsupported(kind: SqlType) -> Iterator[SqlType]:
    if isinstance(kind, CharType):
        yield kind
    elif isinstance(kind, ArrayType):
        yield from _unsupported(kind.element)
    elif isinstance(kind, MapType):
        yield from _unsupported(kind.key)
        yield from _unsupported(kind.value)
    elif isinstance(kind, StructType):
        for field in kind.fields:
            yield from _unsupported(field.type)


class OutputSchema:
    """The output schema of a step, compiled for checking emits.

    An emit is a dict (exactly the schema's field names), a tuple (one value
    per field, by position), a dataclass instance (its fields by name), or,
    when the schema has one field, the field's value itself. Every value must
    fit its field's type, nullability and range (recursively for arrays, maps
    and structs). Anything else is a ``SchemaError`` naming the step, the key,
    the field's path (``items[2].price``) and the offending value.
    """

    def __init__(self, schema: StructType, step_id: str = "") -> None:
        where = f"step {step_id!r}: " if step_id else ""
        if not schema.fields:
            raise ConfigError(f"{where}an output schema needs at least one field")
        seen: Set[str] = set()
        for field in schema.fields:
            if field.name in seen:
                raise ConfigError(f"{where}output field {field.name!r} appears twice in the "
                                  f"output schema")
            seen.add(field.name)
            for kind in _unsupported(field.type):
                raise ConfigError(
                    f"{where}output field {field.name!r}: {kind.simple_string()} is not an "
                    f"output type on Spark (applyInPandas refuses char/varchar); use string")
        self.schema = schema
        self.fields = schema.fields
        self.names = schema.names
        self.width = len(self.fields)
        self.types = [f.type for f in self.fields]
        self._names = dict.fromkeys(self.names).keys()
        self._width = {self.width}
        self._by_name = [itemgetter(name) for name in self.names]
        self._by_position = [itemgetter(index) for index in range(self.width)]

    @classmethod
    def of(cls, schema: Any, step_id: str = "") -> "OutputSchema":
        """Compile a schema given as DDL, a StructType (this module's or
        pyspark's); a bad one is a ConfigError naming the step."""
        try:
            return cls(struct_of(schema), step_id)
        except ConfigError as error:
            if step_id and not str(error).startswith(f"step {step_id!r}"):
                raise ConfigError(f"step {step_id!r}: output_schema: {error}") from None
            raise

    def __repr__(self) -> str:
        return f"OutputSchema({self.schema.ddl()!r})"

    # -- shapes ------------------------------------------------------------------

    def row(self, value: Any) -> Tuple[Any, ...]:
        """An emit as a tuple of field values, or ``_RowMisfit``."""
        kind = type(value)
        if kind is tuple or (kind is not dict and isinstance(value, tuple)):
            if len(value) != self.width:
                raise _RowMisfit(None, value, f"a tuple emit needs {self.width} values, one "
                                              f"per field of {self.names}")
            as_is: Tuple[Any, ...] = value
            return as_is
        if kind is dict or isinstance(value, dict):
            if value.keys() != self._names:
                wrong = _dict_fields(value, self.names)
                assert wrong is not None
                raise _RowMisfit(wrong[0], value, f"emitted dict {wrong[1]}")
            return tuple(value[name] for name in self.names)
        if is_dataclass(value) and not isinstance(value, type):
            return self.row({f.name: getattr(value, f.name) for f in dataclass_fields(value)})
        if self.width == 1:
            return (value,)
        raise _RowMisfit(None, value, f"an emit must be a dict, tuple or dataclass with "
                                      f"fields {self.names}")

    def columns(self, emits: Sequence[Any]) -> Optional[List[List[Any]]]:
        """The emits as one list of values per field, or None when an emit's
        shape is wrong (``raise_first`` says which). With one field, values
        of plain types (int, str, datetime...) are taken as they are."""
        kinds = set(map(type, emits))
        rows: Sequence[Any] = emits
        if self.width == 1 and kinds <= _PLAIN:
            return [list(emits)]
        if kinds == _TUPLE:
            if set(map(len, emits)) - self._width:
                return None
        elif kinds == _DICT:
            if not all(map(self._names.__eq__, map(dict.keys, emits))):
                return None
            return [list(map(getter, emits)) for getter in self._by_name]
        else:
            row = self.row
            try:
                if self.width == 1:
                    return [[value if type(value) in _PLAIN else row(value)[0]
                             for value in emits]]
                rows = [row(value) for value in emits]
            except _RowMisfit:
                return None
        return [list(map(getter, rows)) for getter in self._by_position]

    # -- checks --------------------------------------------------------------------

    def check(self, step_id: str, key: Any, emits: Sequence[Any]) -> None:
        """Every emit of one activation of ``key`` fits, or a SchemaError
        names the first that does not (the offline hosts call this)."""
        if not emits:
            return
        columns = self.columns(emits)
        if columns is None or not all(field.type.ok(column, field.nullable)
                                      for field, column in zip(self.fields, columns)):
            self.raise_first(step_id, emits, lambda index: key)

    def column_ok(self, index: int, column: List[Any],
                  types: Optional[Set[type]] = None) -> bool:
        """Whether every value of field ``index``'s column fits (the Spark
        hosts ask this column by column, then ``raise_first`` if not)."""
        field = self.fields[index]
        return field.type.ok(column, field.nullable, types)

    def raise_first(self, step_id: str, emits: Sequence[Any],
                    key_at: Callable[[int], Any]) -> None:
        """Raise the SchemaError of the first emit that does not fit (in emit
        order; within it, its shape, then its fields in schema order).
        ``key_at(i)``: the key that emitted ``emits[i]``."""
        for position, value in enumerate(emits):
            try:
                values = self.row(value)
            except _RowMisfit as misfit:
                where = "output" if misfit.field is None else f"output field {misfit.field!r}"
                raise SchemaError(step_id, key_at(position), where, misfit.value,
                                  misfit.reason, field=misfit.field) from None
            for field, item in zip(self.fields, values):
                found = field.misfit(item)
                if found is not None:
                    path, bad, reason = found
                    raise SchemaError(step_id, key_at(position), f"output field {path!r}", bad,
                                      reason, field=path)
