"""What goes into the driver's one door and what comes out: a ``KeyBatch``
and its ``Clocks`` in, ``Activations`` out (``Driver.activate_keys``);
``Activation``, one key's result (``Driver.activate``); the counting rule.

>>> batch = KeyBatch(["a", "b"], [["x"], []], stored=[None, b"..."])
>>> batch.keys, batch.eof, Clocks(5).processing_ms
(['a', 'b'], False, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from operator import is_, is_not, not_, or_
from time import perf_counter_ns
from typing import Any, Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple, cast

from ..logic import Logic
from ..metrics import StepMetrics

Columns = Optional[Sequence[Sequence[Any]]]
"""The ``order_by`` columns of an activation's rows, one sequence per column."""
EventTimes = Optional[Sequence[Optional[int]]]
"""The rows' event times in epoch µs (None for a null one); None: no event time."""


class KeyBatch(NamedTuple):
    """A micro-batch of keys for ``Driver.activate_keys``, as parallel
    columns, one entry per key in the order the keys run; a column left None
    is the same for every key:

    - ``keys``, ``values``: each key and its rows, in arrival order;
    - ``stored``: each key's committed snapshot (None: a new key); None: all new;
    - ``committed``: the timer committed with it, where the host kept it
      (``NO_VALUE``: not kept; a rebuilt logic with another one warns);
    - ``event_times``, ``order``: each key's rows' event times (epoch µs) and
      ``order_by`` columns, as the host read them (None: none);
    - ``logics``: each key's live logic, for a host that keeps them between
      batches (``stored`` then only after a crash); None: every key restores;
    - ``eof``: end of input, ``on_eof`` after the rows (``finish``, ``Eof()``);
    - ``bounded``: each key's rows are its whole bounded input;
    - ``ascending``: the host vouches that every key's event times ascend
      without a null (it put them in order with numpy);
    - ``read_columns``: read the event times and order from the values
      themselves (the offline host's rows, ``Driver.read_columns``);
    - ``snapshots``: keep each key's snapshot value (``Activations.snapshots``;
      off, a host that stores the states does not keep every value alive
      through the batch).
    """

    keys: Sequence[Any]
    values: Sequence[Sequence[Any]]
    stored: Optional[Sequence[Optional[bytes]]] = None
    committed: Optional[Sequence[Any]] = None
    event_times: Optional[Sequence[EventTimes]] = None
    order: Optional[Sequence[Columns]] = None
    logics: Optional[Sequence[Optional[Logic]]] = None
    eof: bool = False
    bounded: bool = False
    ascending: bool = False
    read_columns: bool = False
    snapshots: bool = False


class Clocks(NamedTuple):
    """The clocks of a micro-batch: ``now_ms``, the activation clock (the
    watermark in EventTime mode, else the processing time; None: none, as
    for bounded input) and ``processing_ms``, the processing clock of a
    two-clock step (None: deadlines do not fire)."""

    now_ms: Optional[int] = None
    processing_ms: Optional[int] = None


NO_CLOCKS = Clocks()


class Activation(NamedTuple):
    """The result of one key's activation (``Driver.activate``)."""

    emits: List[Any]          # emitted values, in order
    state: Optional[bytes]    # encoded snapshot to store; None: remove / no state
    timer: Optional[int]      # next notify_at in epoch ms; None: no timer
    snapshot: Any             # the snapshot value behind ``state`` (None if no state)
    late: int = 0             # values dropped as late (EventTime mode)
    armed: Optional[int] = None  # the timeout a host arms for ``timer`` (None: none)
    rows: int = 0             # values handed in (late ones included)
    fired: int = 0            # on_notify calls
    created: int = 0          # 1: the key had no state before and has now
    discarded: int = 0        # 1: the key had state before and has none now
    callback_us: int = 0      # Python time in the activation
    deadline: Optional[int] = None  # next processing_notify_at in epoch ms (two-clock steps)
    deadline_fired: int = 0   # on_processing_notify calls (counted in ``fired`` too)

    def metrics(self) -> StepMetrics:
        """This activation's counts (see ``sparkwax.metrics``)."""
        return StepMetrics(self.rows, self.late, self.fired, self.created, self.discarded,
                           len(self.emits), self.callback_us, self.deadline_fired)


_new = cast(Callable[[type, Tuple[Any, ...]], Any], tuple.__new__)
"""``_new(SomeNamedTuple, fields)``: the tuple without the namedtuple's
Python-level constructor (which costs more than the rest of a small step)."""


@dataclass
class Activations:
    """The result of ``Driver.activate_keys``: each key's fields as lists in
    the batch's key order, and the batch's counts summed:

    - ``emits``: each key's emitted values, in order;
    - ``states``: its encoded snapshot to store (None: remove; a live logic's
      is not encoded) and, for a batch with ``snapshots``, ``snapshots``: the
      value behind it (an unchanged one may be a placeholder: decode
      ``states`` if needed);
    - ``timers``: its next ``notify_at`` (epoch ms), ``armed``: the timeout a
      host arms for it, ``deadlines``: its next ``processing_notify_at``
      (two-clock steps);
    - ``logics``: its live logic (None: no state), for a batch with ``logics``;
    - ``metrics``: the keys' counts, summed (``summed``);
    - ``stages``: for a chained step (``chain``), each stage's counts, in
      stage order (empty for any other step).

    A host that keeps what ran before a key's error hands its own empty one
    as ``into``: it then holds the keys before the error, and their counts.
    """

    emits: List[List[Any]] = field(default_factory=list)
    states: List[Optional[bytes]] = field(default_factory=list)
    timers: List[Optional[int]] = field(default_factory=list)
    armed: List[Optional[int]] = field(default_factory=list)
    snapshots: List[Any] = field(default_factory=list)
    deadlines: List[Optional[int]] = field(default_factory=list)
    logics: List[Optional[Logic]] = field(default_factory=list)
    metrics: StepMetrics = field(default_factory=StepMetrics)
    stages: Tuple[StepMetrics, ...] = ()

    def one(self) -> Activation:
        """The Activation of a one-key batch with ``snapshots`` (its counts
        are the key's)."""
        counts = self.metrics
        one: Activation = _new(Activation, (
            self.emits[0], self.states[0], self.timers[0], self.snapshots[0], counts.rows_late,
            self.armed[0], counts.rows_in, counts.timers_fired, counts.keys_created,
            counts.keys_discarded, counts.callback_us, self.deadlines[0],
            counts.processing_timers_fired))
        return one


def summed(acts: Activations, batch: KeyBatch, fired: int, late: int, deadlines_fired: int,
           started: int) -> StepMetrics:
    """The counts of the keys ``acts`` holds (the batch's first ones), from
    its columns and the batch's, and the time since ``started``. THE counting
    rule: a key is created when it had no state (neither ``stored`` nor a
    live logic) and has one now, discarded when it had and has not (one
    created and discarded within the activation counts in neither). Counted
    column by column at C level (``compress``), not key by key.

    >>> acts = Activations(emits=[[1], [], [2, 3]], states=[b"s", None, None])
    >>> counts = summed(acts, KeyBatch("abc", [[1], [], [2, 3]], stored=[None, None, b"s"]),
    ...                 0, 0, 0, perf_counter_ns())
    >>> counts.rows_in, counts.keys_created, counts.keys_discarded, counts.emits
    (3, 1, 1, 3)
    """
    done = len(acts.emits)
    stored = None if batch.stored is None else _head(batch.stored, done)
    if batch.logics is not None:  # a live logic is state too; its snapshot is not encoded
        had = list(map(or_, _present(stored, done), _present(_head(batch.logics, done), done)))
        has = list(_present(acts.logics, done))
        created = sum(compress(has, map(not_, had)))
        discarded = sum(compress(had, map(not_, has)))
    elif stored is None:  # new keys only
        created, discarded = done - acts.states.count(None), 0
    else:  # the states of the keys that had none, the stored ones of the keys that have none
        new = list(compress(acts.states, map(is_, stored, repeat(None))))
        gone = list(compress(stored, map(is_, acts.states, repeat(None))))
        created, discarded = len(new) - new.count(None), len(gone) - gone.count(None)
    return StepMetrics(sum(map(len, _head(batch.values, done))), late, fired, created,
                       discarded, sum(map(len, acts.emits)),
                       (perf_counter_ns() - started) // 1000, deadlines_fired)


def _head(column: Sequence[Any], count: int) -> Sequence[Any]:
    """A column's first ``count`` entries (itself when it has no more)."""
    return column if len(column) == count else list(islice(column, count))


def _present(column: Optional[Sequence[Any]], count: int) -> Iterable[bool]:
    """Whether each of a column's first ``count`` entries is not None."""
    if column is None:
        return repeat(False, count)
    return map(is_not, column, repeat(None))


class Seeded(NamedTuple):
    """``Driver.seed``'s result: a seeded key's state as a restart commits it."""

    state: bytes             # encode(snapshot()) of the logic built from the seed
    timer: Optional[int]     # its notify_at() in epoch ms
    armed: Optional[int]     # the timeout a host arms for it (timer - 1: fires once past)
    deadline: Optional[int]  # its processing_notify_at() in epoch ms (logics with deadlines)


class Restored(NamedTuple):
    """``Driver.restore_check``'s result: what a restart then a commit give."""

    blob: bytes              # encode(snapshot()) of the rebuilt logic
    timer: Optional[int]     # its notify_at() in epoch ms
    deadline: Optional[int]  # its processing_notify_at() in epoch ms (logics with deadlines)
