"""``connect``: several DataFrames with different schemas into one logic.

The sides are tagged and unioned into one keyed stream; the logic sees
``Tagged(side, value)`` items (``side, value = item``), where ``value`` is a
dict of that side's non-key columns. Offline, build such items with
``sparkwax.operators.tag(side, items)``. All sides must be streaming, or all
bounded. The step's ``sparkwax.sides.Sides`` carry the union's layout, so the
driver turns each union row back into ``Tagged`` and keeps a watermark per
side (bounded input too).

The union holds the key columns (cast to the first side's types), the side
number, the columns named by ``time``/``order_by`` (every side must have
them) and one column per (side, column), null on the other sides' rows.
Streaming sides get their own ``withWatermark`` before the union (Spark's
min policy then keeps one watermark per input).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...builders import KeySpec, key_list
from ...errors import ConfigError
from ...sides import SIDE_COLUMN, Layout, Sides, side_names
from ...logic import Builder
from ...step import Host, Step, StepOptions, as_step, default_step_id, refuse_options
from ...timers import EventTime, TimeMode
from .plan import plan_step

if TYPE_CHECKING:
    from typing_extensions import Unpack


def connect(*frames: DataFrame, key: KeySpec, builder: Union[Builder, Step, None] = None,
            step: Optional[Step] = None, names: Optional[Sequence[str]] = None,
            host: Host = "per_key", buckets: Optional[int] = None,
            **options: Unpack[StepOptions]) -> DataFrame:
    """Run ``builder``'s logic over several DataFrames at once; it sees
    ``(side, value)`` items, ``side`` being the side's name (``names``,
    default ``left``/``right`` for two sides, else ``side0``, ``side1``...;
    a Step's own ``sides``).

    ``key``: key column(s) every side has (cast to the first side's types).
    ``time=EventTime(column, ...)`` and ``order_by`` name columns that every
    side has. The step options (or a ready ``step=``) as for
    ``sparkwax.stateful`` (docs/guide.md, "Step options"), but ``sides``:
    ``names`` names them here.
    """
    if len(frames) < 1:
        raise ConfigError("connect needs at least one DataFrame")
    ready = step if step is not None else builder if isinstance(builder, Step) else None
    if ready is None:
        name = options.get("step_id") or default_step_id(builder)
        refuse_options(name, options, frozenset({"sides"}),
                       "connect names its sides with names=")
    made = as_step(builder, step=step, **options)  # every option checked before any Spark work
    names = connected_names(made, len(frames), names, ready is not None)
    keys = key_list(key)
    order = list(made.order_by) if isinstance(made.order_by, tuple) else []
    union, layout = union_of_sides(frames, names, keys, made.time, order)
    return plan_step(union, made.but(sides=Sides(tuple(names), layout)), keys, host=host,
                     buckets=buckets)


def connected_names(step: Step, count: int, names: Optional[Sequence[str]],
                    ready: bool) -> List[str]:
    """The side names of a connected step: ``names``, else a ready Step's
    own sides, else the defaults (``side_names``)."""
    own = list(step.sides.names) if ready and step.sides is not None else None
    if names is not None and own is not None and list(names) != own:
        raise ConfigError(f"step {step.step_id!r}: names={list(names)!r}, but the Step's "
                          f"sides are {own!r}")
    try:
        return side_names(count, names if names is not None else own)
    except ConfigError as error:
        raise ConfigError(f"step {step.step_id!r}: {error}") from None


def union_of_sides(sides: Sequence[DataFrame], names: Sequence[str], keys: List[str],
                   time: Optional[TimeMode],
                   order: List[str]) -> Tuple[DataFrame, Layout]:
    """The union of ``sides`` and its layout (per side, its ``(column, union
    column)`` pairs)."""
    shared: List[str] = []
    if isinstance(time, EventTime):
        shared.append(time.column)
    shared.extend(c for c in order if c not in shared)
    first = {f.name: f.dataType for f in sides[0].schema.fields}
    for name, side in zip(names, sides):
        present = set(side.columns)
        missing = [c for c in keys + shared if c not in present]
        if missing:
            raise ConfigError(f"connect: side {name!r} lacks column(s) {missing} (key, time "
                              f"and order_by columns must exist on every side); it has "
                              f"{side.columns}")
    if isinstance(time, EventTime):
        for name, side in zip(names, sides):
            kind = side.schema[time.column].dataType
            if kind.typeName() != "timestamp":
                raise ConfigError(f"connect: side {name!r}: the EventTime column "
                                  f"{time.column!r} must be a timestamp on every side (each "
                                  f"side keeps its own watermark), it is "
                                  f"{kind.simpleString()}")
    columns: List[Tuple[int, str, Any, str]] = []
    layout: List[Tuple[Tuple[str, str], ...]] = []
    for number, (name, side) in enumerate(zip(names, sides)):
        own = []
        for field in side.schema.fields:
            if field.name in keys:
                continue
            source = f"__sw{number}_{field.name}"
            columns.append((number, field.name, field.dataType, source))
            own.append((field.name, source))
        layout.append(tuple(own))

    def watermarked(column: str) -> bool:
        return isinstance(time, EventTime) and column == time.column

    frames = []
    for number, side in enumerate(sides):
        if isinstance(time, EventTime) and side.isStreaming:
            # One watermark per input; Spark's default policy takes the minimum,
            # so a side far ahead in event time cannot make the others late.
            side = side.withWatermark(time.column, time.spark_delay)
        selected = [F.col(_q(k)).cast(first[k]).alias(k) for k in keys]
        selected.append(F.lit(number).cast("int").alias(SIDE_COLUMN))
        # the time column keeps its type and its watermark (no cast: a cast
        # would drop the metadata EventTimeTimeout looks for after the union)
        selected.extend(F.col(_q(c)).alias(c) if watermarked(c)
                        else F.col(_q(c)).cast(first[c]).alias(c) for c in shared)
        for owner, column, data_type, source in columns:
            selected.append(F.col(_q(column)).alias(source) if owner == number
                            else F.lit(None).cast(data_type).alias(source))
        frames.append(side.select(*selected))
    return reduce(DataFrame.union, frames), tuple(layout)


def side_struct_schema(sides: Sequence[DataFrame], names: Sequence[str], key: KeySpec
                       ) -> T.StructType:
    """One nullable struct field per side, holding its non-key columns."""
    keys = set(key_list(key))
    return T.StructType([
        T.StructField(name, T.StructType([f for f in side.schema.fields if f.name not in keys]),
                      True)
        for name, side in zip(names, sides)])


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
