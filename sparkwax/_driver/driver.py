"""``Driver``: the activation rules of one step, its one door
(``activate_keys``, in ``routes``) and the single-key forms the tests and
tools use (``activate``, ``activate_live``, ``activate_bounded``), each a
one-key batch through the same door.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional, Sequence, Tuple, cast

from .. import recovery
from ..clock import Clock, reset_clock, set_clock
from ..errors import NO_VALUE, LogicError, short_repr
from ..logic import Logic
from ..step import Step
from ..timers import EventTime
from .results import (NO_CLOCKS, Activation, Clocks, Columns, EventTimes, KeyBatch, Restored,
                      Seeded)
from .routes import Routes
from .stages import Staged


class Driver(Routes):
    """The activation rules for one step (a ``sparkwax.step.Step``).

    The step says which builder makes a key's logic (wrapped for its ``ttl``
    and ``max_state_bytes``), ``batch`` for ``StatefulBatchLogic``
    (``on_batch`` instead of ``on_item``), its time mode, ``order_by`` and
    sides. Hosts hand ``activate_keys`` a micro-batch of keys with their
    rows' ``event_times`` (epoch µs, None for a null; EventTime mode only)
    and ``order`` (the ``order_by`` columns, one sequence per column) as
    they read them; the offline host reads both from the values with
    ``read_columns``.
    """

    def __init__(self, step: Step) -> None:
        if not isinstance(step, Step):
            raise TypeError(f"Driver needs a sparkwax.step.Step, got {step!r}")
        self.step_id = step.step_id
        self.batch = step.batch
        self.time = step.time
        self.builder = step.logic_builder()
        self._keyed = getattr(step.builder, "wants_key", False) is True
        # a chain's stages (``Activations.stages`` counts them in this order)
        self._chain = cast(Staged, step.builder) if self._keyed else None
        self.stage_ids: Tuple[str, ...] = () if self._chain is None else self._chain.stage_ids
        self.event_column = step.time.column if isinstance(step.time, EventTime) else None
        self.order_by = step.order_by
        self.sides = step.sides
        sides = step.sides
        self._tag = sides.tagged if sides is not None and sides.layout is not None else None
        self._entry = "on_batch" if step.batch else "on_item"
        # A step without sides: its keys without event times, order or EOF
        # take the plain route (``Routes._plain_steps``).
        self._plain = step.sides is None
        self.two_clocks = step.two_clocks  # processing deadlines beside event timers
        self.lost_state: List[str] = []   # LostStateWarning messages (once per step)
        self._clock: Optional[Clock] = None  # the last activation's (reused at the same now)

    @property
    def uses_watermark(self) -> bool:
        """Whether ``now`` is the watermark (EventTime) or the processing time."""
        return self.time.uses_watermark

    def now_ms(self, watermark_ms: Callable[[], int], processing_ms: Callable[[], int]) -> int:
        """The activation clock from the host's two clocks (asked lazily: a
        Spark query without a watermark has none to ask)."""
        return self.time.now_ms(watermark_ms, processing_ms)

    # -- one key: a one-key batch through the door ------------------------------

    def activate(self, key: Any, stored: Optional[bytes], values: Sequence[Any],
                 now_ms: Optional[int], *, eof: bool = False, event_times: EventTimes = None,
                 order: Columns = None, committed_timer: Any = NO_VALUE,
                 processing_ms: Optional[int] = None, times_ascending: bool = False
                 ) -> Activation:
        """One activation of ``key`` from its ``stored`` state: restore, timer,
        items, EOF, commit (``activate_keys`` of one key). ``committed_timer``:
        the timer committed with ``stored``, if the host kept it; a rebuilt
        logic that disagrees gets a LostStateWarning. ``processing_ms``: the
        processing clock of a two-clock step (None: there is none, deadlines
        do not fire). ``times_ascending``: the caller vouches that
        ``event_times`` ascend without a None."""
        return self.activate_keys(KeyBatch(
            (key,), (values,), (stored,), (committed_timer,),
            None if event_times is None else (event_times,), None if order is None else (order,),
            eof=eof, ascending=times_ascending, snapshots=True),
            Clocks(now_ms, processing_ms)).one()

    def activate_live(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                      values: Sequence[Any], now_ms: Optional[int], *, eof: bool = False,
                      event_times: EventTimes = None, order: Columns = None,
                      committed_timer: Any = NO_VALUE, processing_ms: Optional[int] = None
                      ) -> Tuple[Activation, Optional[Logic]]:
        """``activate`` for a host that keeps live logic objects between
        activations (a long-running Bytewax worker; the offline runner's
        ``restore="on_crash"``): ``logic`` is the key's live object, else
        ``stored`` its committed snapshot (after a crash). Returns the
        activation (``state`` not encoded) and the live logic (None: no state)."""
        acts = self.activate_keys(KeyBatch(
            (key,), (values,), (stored,), (committed_timer,),
            None if event_times is None else (event_times,), None if order is None else (order,),
            (logic,), eof=eof, snapshots=True), Clocks(now_ms, processing_ms))
        return acts.one(), acts.logics[0]

    def activate_bounded(self, key: Any, values: Sequence[Any], *,
                         event_times: EventTimes = None, order: Columns = None) -> Activation:
        """A key of a bounded (batch) input as one sequence, then ``on_eof``
        (``activate_keys`` of one key with ``bounded``; see
        ``Routes._bounded_key``)."""
        return self.activate_keys(KeyBatch(
            (key,), (values,), event_times=None if event_times is None else (event_times,),
            order=None if order is None else (order,), bounded=True, snapshots=True),
            NO_CLOCKS).one()

    # -- snapshots without an activation ----------------------------------------

    def encode_live(self, key: Any, logic: Logic) -> bytes:
        """What a live logic commits: ``encode(snapshot())``."""
        return recovery.encode(self.snapshot(key, logic), step_id=self.step_id, key=key)

    def decode(self, key: Any, stored: bytes) -> Any:
        """A committed snapshot, decoded (errors name the step and key)."""
        return recovery.decode(stored, step_id=self.step_id, key=key)

    def restore_check(self, key: Any, stored: bytes, now_ms: Optional[int] = None,
                      processing_ms: Optional[int] = None) -> Restored:
        """What a restart does with a stored snapshot, then what its commit
        does, with no callback that takes input (``sparkwax state check``):
        ``builder(decode(stored))``, ``encode(snapshot())``, ``notify_at()``
        and, for a logic with deadlines, ``processing_notify_at()``, each
        validated as in an activation (the same errors: SnapshotError,
        BuilderError, CallbackError, NotifyAtError), at the clock ``now_ms``."""
        blob, timer, _, deadline = self._restored(key, stored, now_ms, processing_ms)
        return Restored(blob, timer, deadline)

    def seed(self, key: Any, stored: bytes, now_ms: Optional[int] = None,
             processing_ms: Optional[int] = None) -> Seeded:
        """A seeded key's state before the first micro-batch (docs/semantics.md,
        "Seeding a step"): ``stored`` restored and committed as a restart
        does (``restore_check``), at the first batch's clock: ``(state,
        timer, armed, deadline)``, a ``Seeded``. ``armed`` is the timeout a host arms for
        the timer as if it had been committed before that batch (``timer -
        1``: Spark wakes a key once its clock is past it), so a seeded timer
        already due fires in the first batch, as after a restart. Its errors
        say the snapshot came from the seed."""
        try:
            return self._restored(key, stored, now_ms, processing_ms)
        except LogicError as error:
            raise _from_seed(error) from error

    def _restored(self, key: Any, stored: bytes, now_ms: Optional[int],
                  processing_ms: Optional[int]) -> Seeded:
        """``seed``'s and ``restore_check``'s work."""
        token = set_clock(self._clock_at(now_ms, processing_ms))
        try:
            logic, _ = self._restore(key, stored)
            blob, timer, _, _, deadline = self._commit(key, logic, True, None, now_ms)
        finally:
            reset_clock(token)
        return Seeded(cast(bytes, blob), timer, None if timer is None else timer - 1, deadline)


def _from_seed(error: LogicError) -> LogicError:
    """``error`` (same class and fields), its message saying that the
    snapshot it is about came from the step's seed."""
    seeded = copy.copy(error)
    Exception.__init__(seeded, f"{error}; raised restoring key {short_repr(error.key)}'s "
                               f"snapshot from the seed of step {error.step_id!r} (seed=): a "
                               f"seed's snapshot column holds sw.encode_snapshot(value) of a "
                               f"value the step's builder takes as resume_state")
    return seeded
