"""Schemas read without a JVM: Spark's DDL, and pyspark's types through
their ``jsonValue()``."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Dict, List, NoReturn, Optional, Tuple

from .sql_types import (ArrayType, BIGINT, BINARY, BOOLEAN, CharType, DATE, DOUBLE, DecimalType,
                        FLOAT, INT, MapType, SMALLINT, STRING, SUPPORTED, SqlType, StructField,
                        StructType, TIMESTAMP, TIMESTAMP_NTZ, TINYINT, _SIMPLE)
from ..errors import ConfigError

# --- DDL --------------------------------------------------------------------

_TOKENS = re.compile(r""" (?P<space>\s+)
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
