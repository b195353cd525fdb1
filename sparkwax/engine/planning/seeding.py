"""``seed=``: a streaming step that starts from state given as a bounded
DataFrame of its key columns and ``snapshot``, or as ``{key: snapshot}``
(what the offline ``run(..., seed=)`` takes: made into that DataFrame with
the step's own key types) (docs/semantics.md, "Seeding a step"), planned as
transformWithStateInPandas' initial state (Spark 4.0+), read in the query's
first micro-batch only.

The seed may come from an old job's checkpoint (Spark's state reader,
each row's state made into the logic's snapshot), from history, or by hand:
``seed_frame`` builds one from ``{key: snapshot}``, ``encode_snapshot``
encodes one snapshot as the seed's ``snapshot`` column holds it.

"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...recovery import encode_snapshot
from ...errors import ConfigError
from ..deploy.session_confs import is_connect
from ..hosts.initial_state import SNAPSHOT
from ..spark_version import has_transform_with_state, line, session_version


def seed_frame(spark: Any, snapshots: Mapping[Any, Any], key: str) -> Any:
    """A seed DataFrame from ``{key: snapshot}``: ``key`` is the key
    columns' DDL (``"user string"``, or ``"a string, b long"`` with tuple
    keys), then ``snapshot binary``."""
    several = len(key.split(",")) > 1  # tuple keys, one value per column
    rows = [(*(k if several else (k,)), encode_snapshot(v)) for k, v in snapshots.items()]
    return spark.createDataFrame(rows, f"{key}, {SNAPSHOT} binary")


def seed_input(df: Any, seed: Any, step_id: str, keys: Sequence[str],
               fields: Mapping[str, T.StructField], two_clocks: bool) -> Any:
    """The seed as the step's initial state rows (key columns as the stream
    types them, then ``snapshot``), or a ConfigError saying why it cannot
    seed this step."""
    if not df.isStreaming:
        raise ConfigError(f"step {step_id!r}: seed= starts a streaming step from state; a "
                          f"bounded DataFrame has none to start from (run it over the history "
                          f"and the seed's keys together)")
    if isinstance(seed, Mapping):  # as offline: typed as the step's key columns
        seed = _mapped_seed(df.sparkSession, step_id, seed, keys, fields)
    if getattr(seed, "isStreaming", True):
        raise ConfigError(f"step {step_id!r}: seed= takes a bounded DataFrame of the key "
                          f"columns and {SNAPSHOT!r}, got {type(seed).__name__}"
                          + (" (a streaming one)" if getattr(seed, "isStreaming", False) else ""))
    spark = df.sparkSession
    if is_connect(spark) or not has_transform_with_state(spark):
        where = "over Spark Connect" if is_connect(spark) else \
            f"on Spark {line(session_version(spark))}"
        raise ConfigError(f"step {step_id!r}: seed= needs transformWithStateInPandas's initial "
                          f"state (Spark 4.0+, a classic session); {where} start the step "
                          f"without it, or replay the history through it first")
    if two_clocks:
        raise ConfigError(f"step {step_id!r}: a step with both timer kinds (notify_at and "
                          f"processing_notify_at) runs on applyInPandasWithState, which takes "
                          f"no seed")
    given = {f.name: f for f in seed.schema.fields}
    missing = [name for name in [*keys, SNAPSHOT] if name not in given]
    if missing:
        raise ConfigError(f"step {step_id!r}: the seed has no column {missing[0]!r}: it needs "
                          f"the key columns {list(keys)} and {SNAPSHOT!r} (binary, "
                          f"sw.encode_snapshot), it has {list(given)}")
    if not isinstance(given[SNAPSHOT].dataType, T.BinaryType):
        raise ConfigError(f"step {step_id!r}: the seed's {SNAPSHOT!r} column must be binary "
                          f"(sw.encode_snapshot of each snapshot), it is "
                          f"{given[SNAPSHOT].dataType.simpleString()}")
    for name in keys:
        check_key_type(step_id, name, given[name].dataType, fields[name].dataType,
                       [(key, fields[key].dataType) for key in keys])
    return seed.select(*[F.col(f"`{name}`").cast(fields[name].dataType).alias(name)
                         for name in keys], F.col(SNAPSHOT))


def _mapped_seed(spark: Any, step_id: str, snapshots: Mapping[Any, Any], keys: Sequence[str],
                 fields: Mapping[str, T.StructField]) -> Any:
    """``{key: snapshot}`` as a seed DataFrame whose key columns have the
    step's own names and types (a tuple key for several key columns, as
    offline), each snapshot encoded (``sw.encode_snapshot``)."""
    several = len(keys) > 1
    rows = []
    for key, snapshot in snapshots.items():
        values = tuple(key) if several and isinstance(key, tuple) else (key,)
        if len(values) != len(keys):
            raise ConfigError(f"step {step_id!r}: seed key {key!r}: the step's key is "
                              f"{list(keys)}, so each seed key is a tuple of {len(keys)} "
                              f"values")
        rows.append((*values, encode_snapshot(snapshot)))
    schema = T.StructType([T.StructField(name, fields[name].dataType, True) for name in keys]
                          + [T.StructField(SNAPSHOT, T.BinaryType(), False)])
    try:
        return spark.createDataFrame(rows, schema)
    except (TypeError, ValueError) as error:  # a key that is not of the key's type
        types = ", ".join(f"{name} {fields[name].dataType.simpleString()}" for name in keys)
        raise ConfigError(f"step {step_id!r}: a seed key does not fit the step's key "
                          f"columns ({types}): {error}") from None


_WIDER = [T.ByteType, T.ShortType, T.IntegerType, T.LongType]  # each holds the ones before


def widens(given: T.DataType, wanted: T.DataType) -> bool:
    """Whether every value of type ``given`` is the same value as ``wanted``:
    the same type (nullability aside), or a narrower integer into a wider
    one. Every other cast can change a key or lose it (``1`` to ``'1'``,
    ``'01'`` to ``1``, µs to ms), so a seed's key column must not need one.

    >>> widens(T.IntegerType(), T.LongType()), widens(T.LongType(), T.StringType())
    (True, False)
    >>> widens(T.LongType(), T.IntegerType()), widens(T.TimestampType(), T.TimestampNTZType())
    (False, False)
    """
    if given.simpleString() == wanted.simpleString():
        return True
    ranks = [index for index, kind in enumerate(_WIDER) if isinstance(given, kind)]
    return bool(ranks) and any(isinstance(wanted, kind) for kind in _WIDER[ranks[0]:])


def check_key_type(step_id: str, name: str, given: T.DataType, wanted: T.DataType,
                   key: Sequence[Any]) -> None:
    """A ConfigError when the seed's key column ``name`` (of type ``given``)
    does not hold the step's key values (``wanted``) as they are: seeded
    under a cast key, a key's state would go to another key (or none) and
    the real key would start new. ``key``: the step's ``(name, type)``s."""
    if widens(given, wanted):
        return
    ddl = ", ".join(f"{column} {kind.simpleString()}" for column, kind in key)
    raise ConfigError(f"step {step_id!r}: the seed's key column {name!r} is "
                      f"{given.simpleString()} but the step's key {name!r} is "
                      f"{wanted.simpleString()}; seeding through a cast could give a key's "
                      f"state to another key (a bigint 1 seeds the string key '1') and start "
                      f"the real key new, so the seed is refused. Build the seed with the "
                      f"step's key types: sw.seed_frame(spark, snapshots, {ddl!r}), or a "
                      f"{name!r} column of type {wanted.simpleString()} (only a narrower "
                      f"integer into a wider one is taken as it is)")


__all__ = ["check_key_type", "seed_frame", "seed_input", "widens"]
