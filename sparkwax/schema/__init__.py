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


from .emit_check import OutputSchema
from .ddl import parse_ddl, parse_type, struct_of, type_of_json
from .sql_types import (ArrayType, BIGINT, BINARY, BOOLEAN, BinaryType, BooleanType, CharType, DATE,
                        DOUBLE, DateType, DecimalType, FLOAT, FractionalType, INT, IntegralType,
                        MapType, SMALLINT, STRING, SqlType, StringType, StructField, StructType,
                        TIMESTAMP, TIMESTAMP_HIGH, TIMESTAMP_LOW, TIMESTAMP_NTZ, TINYINT,
                        TimestampType)

__all__ = [
    "ArrayType", "BINARY", "BIGINT", "BOOLEAN", "BinaryType", "BooleanType", "CharType", "DATE",
    "DOUBLE", "DateType", "DecimalType", "FLOAT", "FractionalType", "INT", "IntegralType",
    "MapType", "OutputSchema", "SMALLINT", "STRING", "SqlType", "StringType", "StructField",
    "StructType", "TIMESTAMP", "TIMESTAMP_HIGH", "TIMESTAMP_LOW", "TIMESTAMP_NTZ", "TINYINT", "TimestampType", "parse_ddl",
    "parse_type", "struct_of", "type_of_json",
]
