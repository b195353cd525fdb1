"""What window operators emit: :class:`WindowOut`, and their Spark schema.

>>> window_schema("long")
'window_id long, open_time timestamp, close_time timestamp, value long, late string'
>>> WindowOut(0, None, None, late={"x": 1})
WindowOut(window_id=0, open_time=None, close_time=None, value=None, late={'x': 1})
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

__all__ = ["WindowOut", "window_schema"]


@dataclass(frozen=True)
class WindowOut:
    """One emit of a window operator. A result has ``late=None``; a late value
    has ``value=None`` and ``late=<the input value>``. On Spark use
    :func:`window_schema` as the output schema (the field names are the
    schema's)."""

    window_id: int
    open_time: Optional[datetime]
    close_time: Optional[datetime]
    value: Any = None
    late: Any = None


def window_schema(value: str, late: str = "string") -> str:
    """The output schema (DDL) of a window operator on Spark: ``value`` is the
    result's type (``"long"`` for counts, ``"struct<...>"``...), ``late`` the
    late values' type (``value_struct(df, key)``; never used without
    ``lateness=``)."""
    return (f"window_id long, open_time timestamp, close_time timestamp, value {value}, "
            f"late {late}")
