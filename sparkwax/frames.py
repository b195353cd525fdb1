"""DataFrame-level operators: the one module built on both ``sparkwax.engine``
(the Spark plumbing) and ``sparkwax.operators`` (the logics), as the command
line is. ``sparkwax.join`` and the other names here load it (and pyspark) on
first use.

>>> import sparkwax as sw                                            # doctest: +SKIP
>>> paid = sw.join(orders, payments, key="order_id", names=["order", "payment"])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .builders import KeySpec
from .engine.planning.connecting import connect, side_struct_schema
from .engine.planning.schemas import split_late, value_fields, value_struct
from .operators.joins import joiner
from .sides import side_names
from .step import Host
from .timers import TimeMode


def join(*sides: Any, key: KeySpec, names: Optional[Sequence[str]] = None,
         insert_mode: str = "last", emit_mode: str = "complete",
         time: Optional[TimeMode] = None, order_by: Any = None,
         step_id: Optional[str] = None, host: Host = "per_key") -> Any:
    """Join DataFrames per key: ``join(left_df, right_df, key="id")``, with
    ``sparkwax.operators.joiner``'s ``insert_mode`` and ``emit_mode``.

    The result has the key columns and one struct column per side (named by
    ``names``, default ``left``/``right``, or ``side0``...), holding that
    side's non-key columns (null for a missing side). ``time`` and
    ``order_by`` name columns that every side has (see ``connect``).
    """
    names = side_names(len(sides), names)
    builder = joiner(names, insert_mode=insert_mode, emit_mode=emit_mode)
    schema = side_struct_schema(sides, names, key)
    return connect(*sides, key=key, builder=builder, output_schema=schema, names=names,
                   time=time, order_by=order_by, step_id=step_id, host=host)


__all__ = ["connect", "join", "split_late", "value_fields", "value_struct"]
