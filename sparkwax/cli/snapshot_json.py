"""``json_value``, kept importable from here: it lives in the core
(``sparkwax.snapshot_json``), where executors reach it."""

from ..snapshot_json import json_value

__all__ = ["json_value"]
