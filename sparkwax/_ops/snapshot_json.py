"""Snapshots as JSON, for ``sparkwax state show --json``, ``read_state`` and other scripts
(core: the executors decode snapshots into this JSON).

JSON values stay as they are; datetimes (and dates, times) become ISO 8601
strings, with their zone when they have one; tuples and lists become arrays;
dicts with string keys become objects. Everything else is tagged, so a
reader can tell it from a plain string: bytes as ``{"$bytes": base64}``, other
dicts as ``{"$dict": [[key, value], ...]}``, sets as ``{"$set": [...]}``
(sorted by repr) and anything else as ``{"$repr": repr(value)}``.

>>> from datetime import datetime, timezone
>>> json_value((3, datetime(2024, 1, 1, tzinfo=timezone.utc), b"hi", {1: "a"}, float("nan")))
[3, '2024-01-01T00:00:00+00:00', {'$bytes': 'aGk='}, {'$dict': [[1, 'a']]}, {'$repr': 'nan'}]
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from typing import Any


def json_value(value: Any) -> Any:
    """``value`` as a JSON-ready structure (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$repr": repr(value)}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: json_value(v) for k, v in value.items()}
        return {"$dict": [[json_value(k), json_value(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"$set": [json_value(item) for item in sorted(value, key=repr)]}
    return {"$repr": repr(value)}


__all__ = ["json_value"]
