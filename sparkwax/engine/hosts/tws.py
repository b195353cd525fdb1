"""A step after another in one streaming query: the same host inside
``transformWithStateInPandas`` (Spark 4.0+).

Spark runs one ``applyInPandasWithState`` per query, but stateful operators
may follow it; ``transformWithStateInPandas`` is one (see
docs/semantics.md, "Re-keyed steps in one query"). The step keeps its host
(``StreamingHost`` or ``PackedHost``) and so its driver: ``TwsGroupState``
gives the host the ``GroupState`` it reads and writes, kept in one
``ValueState`` row (the host's state row and the timer registered for it),
and ``TwsProcessor`` calls the host for a key's rows
(``handleInputRows``) and for its fired timer (``handleExpiredTimer``),
as ``applyInPandasWithState`` would with ``hasTimedOut``.

Spark's timeouts and these timers fire alike: a ``GroupState`` timeout at
``t`` when the batch's watermark (event time) or processing time passes
``t``; Spark registers a timer at ``t`` to fire then too. A group with rows
and a due timer gets its rows' call only (the host fires the timer in it,
then re-arms, which deletes the timer before Spark looks for fired ones).

What Spark holds for a key is what its row records, so the host never
registers a timer Spark has nor deletes one it has not (Spark's
``TimerStateImpl`` warns of each): PySpark deletes a fired timer after
``handleExpiredTimer`` returns, so that call leaves it alone, and a timeout
re-armed at the very time that fired (a timer fires once the watermark
*reaches* it, a timeout only once it *passes*) is registered 1 ms later,
when ``GroupState``'s would fire. A row is read with ``exists()`` first
(``get()`` of an absent row logs a warning on the state server); a fired
timer's key always has one. A timeout set without ``update()`` keeps the
row and arms it, as ``GroupState`` does (the two-clock host does that; it
is still kept off this operator, whose time mode is one kind); a key
without state cannot have one, here as in ``GroupState``.

>>> state = TwsGroupState(_Value(), _Timers(), _Clock(), timed_out=False)
>>> state.exists, state.hasTimedOut
(False, False)
>>> state.update((b"s", 5)); state.setTimeoutTimestamp(60_000); state.finish()
>>> state.timers.registered, state.value.row
([60000], (b's', 5, 60000))
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

import pandas as pd

from ..checkpoints.format.files import FOLLOWING_STATE
from ..spark_version import quiet_driver_worker
from .initial_state import seed_bucket, seed_key

_KEEP, _REMOVE, _UPDATE = "keep", "remove", "update"


class TwsGroupState:
    """The ``GroupState`` a host uses, over a TWS ``ValueState`` whose row is
    the host's state row plus the registered timer (ms, or None)."""

    def __init__(self, value: Any, timers: Any, clock: Any, *, timed_out: bool,
                 fired: Optional[int] = None):
        self.value = value        # the ValueState
        self.timers = timers      # the StatefulProcessorHandle (registerTimer, deleteTimer)
        self.clock = clock        # the call's TimerValues
        self.hasTimedOut = timed_out
        self._fired = fired if timed_out else None  # PySpark deletes it after this call
        # a fired timer's key has a row; else exists() first: get() of none logs a warning
        stored = value.get() if timed_out or value.exists() else None
        self._row: Optional[Tuple[Any, ...]] = None if stored is None else tuple(stored)[:-1]
        self._registered = None if stored is None else _ms(tuple(stored)[-1])
        self._action = _KEEP
        self._timeout: Optional[int] = None

    @property
    def exists(self) -> bool:
        return self._row is not None

    @property
    def get(self) -> Tuple[Any, ...]:
        assert self._row is not None
        return self._row

    def update(self, row: Tuple[Any, ...]) -> None:
        self._row, self._action, self._timeout = tuple(row), _UPDATE, None

    def remove(self) -> None:
        self._row, self._action, self._timeout = None, _REMOVE, None

    def setTimeoutTimestamp(self, timestamp_ms: int) -> None:  # noqa: N802 (GroupState's name)
        self._timeout = int(timestamp_ms)

    def setTimeoutDuration(self, duration_ms: int) -> None:  # noqa: N802
        self._timeout = int(self.clock.getCurrentProcessingTimeInMs()) + int(duration_ms)

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802
        return int(self.clock.getCurrentWatermarkInMs())

    def getCurrentProcessingTimeMs(self) -> int:  # noqa: N802
        return int(self.clock.getCurrentProcessingTimeInMs())

    def finish(self) -> None:
        """Write what the host did: the row (or its removal) and the timer,
        deleting the one registered before if it changed (not the fired
        one: PySpark does, after this call)."""
        fired, registered = self._fired, self._registered
        if self._action == _KEEP and self._timeout is not None:  # GroupState: state kept,
            if self._row is None:                                 # timeout set
                raise RuntimeError("sparkwax internal error: a host set a timeout for a key "
                                   "without state on transformWithStateInPandas, which "
                                   "GroupState refuses too (report it)")
            self._action = _UPDATE
        if self._action == _KEEP:
            if self._row is not None and fired is not None and registered == fired:
                self.value.update((*self._row, None))  # the fired timer goes
            return
        wanted = self._timeout if self._action == _UPDATE else None
        if wanted is not None and wanted == fired:
            wanted += 1  # the fired timer is deleted after this call; fires when GroupState's would
        if registered is not None and registered not in (wanted, fired):
            self.timers.deleteTimer(registered)
        if wanted is not None and wanted != registered:
            self.timers.registerTimer(wanted)
        if self._row is None:
            self.value.clear()
        else:
            self.value.update((*self._row, wanted))


def _ms(value: Any) -> Optional[int]:
    return None if value is None or value != value else int(value)  # NaN: a null long


class TwsProcessor:
    """The ``StatefulProcessor`` of a step hosted on transformWithStateInPandas:
    its methods call ``host`` (a ``StreamingHost`` or ``PackedHost``) as
    ``applyInPandasWithState`` would. ``state_schema``: the ValueState's
    schema (the host's state row, then ``registered long``); ``columns``:
    the input's column names (PySpark names a group's columns ``_0``,
    ``_1``... when its input was built by ``mapInArrow``, as the packed
    host's packed rows are)."""

    def __init__(self, host: Any, state_schema: Any, columns: Tuple[str, ...]):
        self.host = host
        self.state_schema = state_schema
        self.columns = columns
        self.handle: Any = None
        self.value: Any = None

    def __setstate__(self, state: Dict[str, Any]) -> None:
        """Unpickled where Spark runs it; in pyspark's driver-side worker (the
        state schema check) that worker's own printed lines are dropped."""
        self.__dict__.update(state)
        quiet_driver_worker()

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.value = handle.getValueState(FOLLOWING_STATE, self.state_schema)

    def handleInputRows(self, key: Tuple[Any, ...], rows: Iterator[pd.DataFrame],  # noqa: N802
                        timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
        return self._call(key, rows, timerValues, timed_out=False)

    def handleExpiredTimer(self, key: Tuple[Any, ...], timerValues: Any,  # noqa: N802,N803
                           expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
        return self._call(key, iter(()), timerValues, timed_out=True,
                          fired=int(expiredTimerInfo.getExpiryTimeInMs()))

    def handleInitialState(self, key: Tuple[Any, ...], initialState: pd.DataFrame,  # noqa
                           timerValues: Any) -> None:  # noqa: N803
        """A seeded key's (or bucket's) state, before the first batch's rows
        (``hosts.initial_state``). PySpark 4.0 also calls it, with an empty frame,
        for a key that has rows and no seed: nothing to seed then."""
        if len(initialState) == 0:
            return
        state = TwsGroupState(self.value, self.handle, timerValues, timed_out=False)
        if hasattr(self.host, "key_names"):  # packed: the bucket's keys
            seed_bucket(self.host, initialState, state)
        else:
            seed_key(self.host, tuple(key), initialState, state)
        state.finish()

    def _call(self, key: Tuple[Any, ...], rows: Iterator[pd.DataFrame], clock: Any, *,
              timed_out: bool, fired: Optional[int] = None) -> Iterator[pd.DataFrame]:
        state = TwsGroupState(self.value, self.handle, clock, timed_out=timed_out, fired=fired)
        frames: List[pd.DataFrame] = list(self.host(tuple(key), self._named(rows), state))
        state.finish()
        return iter(frames)

    def _named(self, rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for frame in rows:
            if len(frame.columns) == len(self.columns) and \
                    tuple(frame.columns) != self.columns:
                frame.columns = list(self.columns)
            yield frame

    def close(self) -> None:
        pass


def as_stateful_processor(processor: TwsProcessor) -> Any:
    """``processor`` as an instance of PySpark's ``StatefulProcessor`` (which
    ``transformWithStateInPandas`` requires; PySpark 4.0+)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class SparkwaxProcessor(StatefulProcessor):
        def __init__(self, inner: TwsProcessor):
            self.inner = inner

        def init(self, handle: Any) -> None:
            self.inner.init(handle)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:  # noqa
            return self.inner.handleInputRows(key, rows, timerValues)

        def handleExpiredTimer(self, key: Any, timerValues: Any,  # noqa
                               expiredTimerInfo: Any) -> Any:  # noqa
            return self.inner.handleExpiredTimer(key, timerValues, expiredTimerInfo)

        def handleInitialState(self, key: Any, initialState: Any,  # noqa
                               timerValues: Any) -> None:  # noqa
            self.inner.handleInitialState(key, initialState, timerValues)

        def close(self) -> None:
            self.inner.close()

    return SparkwaxProcessor(processor)


class _Value:
    """A ValueState in memory (the doctest's); ``warnings``: what Spark's
    state server would have logged."""

    def __init__(self) -> None:
        self.row: Optional[Tuple[Any, ...]] = None
        self.warnings: List[str] = []

    def exists(self) -> bool:
        return self.row is not None

    def get(self) -> Optional[Tuple[Any, ...]]:
        if self.row is None:
            self.warnings.append("doesn't contain a value")
        return self.row

    def update(self, row: Tuple[Any, ...]) -> None:
        self.row = row

    def clear(self) -> None:
        self.row = None


class _Timers:
    """A key's timers as Spark's ``TimerStateImpl`` keeps them: registering
    one it has, or deleting one it has not, is a warning and does nothing."""

    def __init__(self) -> None:
        self.registered: List[int] = []
        self.warnings: List[str] = []

    def registerTimer(self, ms: int) -> None:  # noqa: N802
        if ms in self.registered:
            self.warnings.append(f"Failed to register timer {ms}: it already exists")
        else:
            self.registered.append(ms)

    def deleteTimer(self, ms: int) -> None:  # noqa: N802
        if ms not in self.registered:
            self.warnings.append(f"Failed to delete timer {ms}: it does not exist")
        else:
            self.registered.remove(ms)


class _Clock:
    def getCurrentProcessingTimeInMs(self) -> int:  # noqa: N802
        return 1_000

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802
        return 0
