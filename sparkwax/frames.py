"""DataFrame-level operators: the one module built on both ``sparkwax.engine``
(the Spark plumbing) and ``sparkwax.operators`` (the logics), as the command
line is. ``sparkwax.join`` loads it (and pyspark) on first use; ``connect``,
``split_late`` and ``value_*`` are the engine's (``sparkwax.engine.ENTRY_POINTS``).

>>> import sparkwax as sw                                            # doctest: +SKIP
>>> paid = sw.join(orders, payments, key="order_id", names=["order", "payment"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from .builders import KeySpec
from .engine.planning.connecting import connect, connected_names, side_struct_schema
from .operators.joins import joiner
from .sides import side_names
from .errors import ConfigError
from .step import Host, Step, StepOptions, as_step, default_step_id, refuse_options

if TYPE_CHECKING:
    from typing_extensions import Unpack


def join(*frames: Any, key: KeySpec, names: Optional[Sequence[str]] = None,
         insert_mode: Optional[str] = None, emit_mode: Optional[str] = None,
         step: Optional[Step] = None, host: Host = "per_key", buckets: Optional[int] = None,
         **options: Unpack[StepOptions]) -> Any:
    """Join DataFrames per key: ``join(left_df, right_df, key="id")``, with
    ``sparkwax.operators.joiner``'s ``insert_mode`` (default ``"last"``) and
    ``emit_mode`` (default ``"complete"``).

    The result has the key columns and one struct column per side (named by
    ``names``, default ``left``/``right``, or ``side0``...), holding that
    side's non-key columns (null for a missing side). ``time`` and
    ``order_by`` name columns that every side has (see ``connect``). The
    step options as for ``sparkwax.stateful`` (docs/guide.md, "Step
    options"), but ``output_schema`` and ``sides``, which the join makes; or
    a ready ``step=`` (say ``sw.Step.of(joiner(names), ...)``, run offline
    first), whose sides name the sides.
    """
    if step is None:
        names = side_names(len(frames), names)
        builder = joiner(names, insert_mode=insert_mode or "last",
                         emit_mode=emit_mode or "complete")
        refuse_options(options.get("step_id") or default_step_id(builder), options,
                       frozenset({"output_schema", "sides"}),
                       "the join makes them from its sides")
        joined: StepOptions = {**options,
                               "output_schema": side_struct_schema(frames, names, key)}
        return connect(*frames, key=key, builder=builder, names=names, host=host,
                       buckets=buckets, **joined)
    made = as_step(step=step, **options)
    for option, given in (("insert_mode", insert_mode), ("emit_mode", emit_mode)):
        if given is not None:
            raise ConfigError(f"step {made.step_id!r}: {option}= is the Step's joiner's; "
                              "give it to joiner(...)")
    names = connected_names(made, len(frames), names, True)
    if made.output_schema is None:
        made = made.but(output_schema=side_struct_schema(frames, names, key))
    return connect(*frames, key=key, step=made, names=names, host=host, buckets=buckets)


__all__ = ["join"]
