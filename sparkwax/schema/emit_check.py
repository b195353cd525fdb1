"""The one output checker every host runs: emits against a step's schema."""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import fields as dataclass_fields, is_dataclass
from operator import itemgetter
from typing import Any, Callable, Iterator, List, Optional, Sequence, Set, Tuple

from .sql_types import ArrayType, CharType, MapType, SqlType, StructType, _NONE, _dict_fields
from .ddl import struct_of
from ..errors import ConfigError, SchemaError

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
