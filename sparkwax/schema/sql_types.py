"""Spark SQL's types as sparkwax checks them: each type knows whether a
value (or a column of values) fits, and why not."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from dataclasses import dataclass, is_dataclass
from functools import lru_cache
from itertools import chain
from operator import itemgetter, methodcaller
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple


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
    """string: a str Spark can hold, that is one that encodes as UTF-8 (a
    lone surrogate such as ``"\\ud800"`` does not: Arrow refuses it)."""

    exact = frozenset({str})
    accepted = (str,)
    expected = "a str"

    def simple_string(self) -> str:
        return "string"

    def ok(self, values: List[Any], nullable: bool, types: Optional[Set[type]] = None) -> bool:
        kinds = set(map(type, values)) if types is None else types
        if kinds <= self.exact:
            return _utf8(values)
        if kinds <= self.exact | {_NONE}:
            return nullable and _utf8(_present(values, kinds))
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return isinstance(value, str) and _utf8([value])

    def misfit(self, value: Any) -> Optional[Misfit]:
        if not isinstance(value, str):
            return self._wrong(value, self.expected)
        if _utf8([value]):
            return None
        index = next(i for i, char in enumerate(value) if "\ud800" <= char <= "\udfff")
        return ("", value, f"does not fit string: a lone surrogate {value[index]!r} at index "
                           f"{index} is not UTF-8, which Spark's strings are (decode the "
                           f"source with errors='replace', or drop it)")


def _utf8(values: List[str]) -> bool:
    """Whether every str encodes as UTF-8 (``str.isascii`` is O(1) in
    CPython: only non-ASCII strings are encoded, all at once)."""
    if all(map(str.isascii, values)):
        return True
    try:
        "".join(value for value in values if not value.isascii()).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


# Spark hands an output timestamp to pandas as nanoseconds since the epoch in
# an int64: these are the first and last microseconds that hold (pandas'
# Timestamp.min/max, 1677-09-21 and 2262-04-11); beyond them applyInPandas
# fails in pandas (OutOfBoundsDatetime) with no step, key or field.
TIMESTAMP_LOW_US = -((1 << 63) - 1) // 1000 + 1
TIMESTAMP_HIGH_US = ((1 << 63) - 1) // 1000
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
TIMESTAMP_LOW = _EPOCH_UTC + dt.timedelta(microseconds=TIMESTAMP_LOW_US)
TIMESTAMP_HIGH = _EPOCH_UTC + dt.timedelta(microseconds=TIMESTAMP_HIGH_US)
_LOW_NAIVE, _HIGH_NAIVE = (TIMESTAMP_LOW.replace(tzinfo=None),
                           TIMESTAMP_HIGH.replace(tzinfo=None))
TIMESTAMP_RANGE = f"{_LOW_NAIVE.isoformat(' ')} .. {_HIGH_NAIVE.isoformat(' ')}"
"""The range of an output timestamp, as messages name it."""


def _timestamp_in_range(value: dt.datetime) -> bool:
    if value.utcoffset() is None:
        return _LOW_NAIVE <= value <= _HIGH_NAIVE
    return TIMESTAMP_LOW <= value <= TIMESTAMP_HIGH


@dataclass(frozen=True)
class TimestampType(SqlType):
    """timestamp: an aware datetime (naive ones are refused: Spark would read
    them in the session's time zone); timestamp_ntz: any datetime. Either
    within ``TIMESTAMP_RANGE`` (Spark converts output timestamps through
    pandas' nanoseconds)."""

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
            if not values:
                return True
            offsets = list(map(_utcoffset, values))
            if None not in offsets:  # all aware: compared in C
                return bool(TIMESTAMP_LOW <= min(values) and max(values) <= TIMESTAMP_HIGH)
            if not self.ntz:
                return False
            return all(map(_timestamp_in_range, values))
        return self._each(values, nullable)

    def fits(self, value: Any) -> bool:
        return (isinstance(value, dt.datetime) and (self.ntz or value.utcoffset() is not None)
                and _timestamp_in_range(value))

    def misfit(self, value: Any) -> Optional[Misfit]:
        if self.fits(value):
            return None
        if isinstance(value, dt.datetime):
            if not self.ntz and value.utcoffset() is None:
                return ("", value, "does not fit timestamp: naive datetime: emit an aware one, "
                                   "e.g. tzinfo=timezone.utc")
            zone = "" if value.utcoffset() is None else " UTC"
            return ("", value, f"out of range for {self.simple_string()}: allowed "
                               f"{TIMESTAMP_RANGE}{zone} (Spark converts output timestamps "
                               f"through pandas' nanoseconds)")
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
