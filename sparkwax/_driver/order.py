"""Step 0 of an activation, the rows' order, and lateness: the ``order_by``
and event-time columns read from values (the offline host's rows), the
stable sort (by the order columns, else by event time, nulls first), the
late rows dropped in EventTime mode; ``sorted_keys``, the order hosts run
keys in.

>>> sorted_keys(["b", "a", "b"]), sorted_keys([2, "a"])
(['a', 'b'], [2, 'a'])
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import islice
from operator import lt as _lt
from typing import Any, Callable, List, Optional, Sequence, Tuple, cast

from ..errors import NO_VALUE, InputError
from ..sides import Sides, untagged_side
from ..timers import TimeMode, require_aware, to_epoch_us
from .results import Columns, EventTimes

_MISSING = object()


class Order:
    """The driver's rows: read, arranged, late ones dropped (a ``Driver`` base)."""

    step_id: str
    time: TimeMode
    event_column: Any                  # EventTime's column (a name or a callable), or None
    order_by: Any                      # the Step's order_by: column names or a callable
    sides: Optional[Sides]

    @property
    def side_count(self) -> int:
        """How many inputs (each with its own watermark) the step has."""
        return 1 if self.sides is None else len(self.sides)

    def side_of(self, key: Any, value: Any) -> int:
        """The input a value comes from (0 for a step with one input)."""
        if self.sides is None:
            untagged_side(self.step_id, value)
            return 0
        return self.sides.index_of(self.step_id, key, value)

    def read_columns(self, key: Any, values: Sequence[Any]
                     ) -> Tuple[Optional[List[Optional[int]]], Columns]:
        """``(event_times, order)`` read from the values themselves (the
        offline host's rows): ``value[field]`` for a mapping, else the
        attribute, or the callable's result."""
        times = None
        if self.event_column is not None:
            times = [self.event_time_of(key, value) for value in values]
        order: Columns = None
        order_by = self.order_by
        if callable(order_by):
            order = ([self._call_order_by(order_by, key, value) for value in values],)
        elif order_by:
            order = tuple([_field(value, name) for value in values] for name in order_by)
        return times, order

    def event_time_of(self, key: Any, value: Any) -> Optional[int]:
        """A value's event time in epoch µs (None for a null one)."""
        column: Any = self.event_column
        if callable(column):
            try:
                moment = column(value)
            except Exception as error:
                raise InputError(self.step_id, key, "event time", value,
                                 f"the EventTime callable {column!r} raised {error!r}"
                                 ) from error
        else:
            moment = _field(value, column, _MISSING)
            if moment is _MISSING:
                raise InputError(self.step_id, key, "event time", value,
                                 f"EventTime({column!r}) needs each value to have a "
                                 f"{column!r} field (a mapping key or an attribute)")
        if moment is None:
            return None
        try:
            return to_epoch_us(require_aware(moment))
        except (TypeError, ValueError) as error:
            raise InputError(self.step_id, key, "event time", moment,
                             f"the event time column {column!r} must hold aware datetimes: "
                             f"{error}") from None

    def _call_order_by(self, order_by: Callable[[Any], Any], key: Any, value: Any) -> Any:
        try:
            return order_by(value)
        except Exception as error:
            raise InputError(self.step_id, key, "order_by", value,
                             f"the order_by callable raised {error!r}") from error

    def _arrange(self, key: Any, values: Sequence[Any], times: EventTimes, order: Columns
                 ) -> Tuple[Sequence[Any], EventTimes]:
        """Values (and their event times) in activation order: stable, by the
        order columns, else by event time; nulls first."""
        values, times, _ = self._arrange_ordered(key, values, times, order)
        return values, times

    def _arrange_ordered(self, key: Any, values: Sequence[Any], times: EventTimes,
                         order: Columns, ascending: bool = False
                         ) -> Tuple[Sequence[Any], EventTimes, bool]:
        """``_arrange`` and whether the event times it returns are known to be
        ascending without a null (``_drop_late`` then needs no scan). Rows
        already in order are returned as they are: no row is less than the
        one before it, the comparisons a stable sort would make first and
        the case in which it would change nothing. ``ascending``: the caller
        vouches that ``times`` ascend without a None; without ``order`` that
        is the same case, known without a pass over the rows."""
        if ascending and order is None and times is not None:
            return values, times, True
        count = len(values)
        if count < 2:
            return values, times, times is not None and order is None and None not in times
        columns: Sequence[Sequence[Any]]
        if order is not None:
            columns = order
        elif times is not None:
            columns = (times,)
        else:
            return values, times, False
        try:
            if len(columns) == 1 and None not in columns[0]:
                column = columns[0]
                if not any(map(_lt, islice(column, 1, None), column)):
                    return values, times, order is None
                by: Callable[[int], Any] = column.__getitem__
                index = sorted(range(count), key=by)
            else:
                index = sorted(range(count), key=lambda i: tuple(
                    (c[i] is not None, c[i]) for c in columns))
        except TypeError as error:
            raise InputError(self.step_id, key, "order_by", NO_VALUE,
                             f"the rows' order_by values cannot be compared: {error}"
                             ) from None
        if times is None:
            return [values[i] for i in index], None, False
        return [values[i] for i in index], [times[i] for i in index], order is None \
            and None not in times

    def _drop_late(self, values: Sequence[Any], event_times: Sequence[Optional[int]],
                   watermark_us: int, ordered: bool = False) -> Tuple[Sequence[Any], int]:
        """Lateness: an event time at or behind the watermark, or a null one.
        ``ordered``: the times ascend without a null, so the late ones lead."""
        if len(event_times) != len(values):
            raise ValueError(f"{len(event_times)} event times for {len(values)} values")
        if ordered:
            late = bisect_right(cast("Sequence[int]", event_times), watermark_us)
            return (values[late:] if late else values), late
        if event_times and None not in event_times \
                and min(cast("Sequence[int]", event_times)) > watermark_us:
            return values, 0
        kept = [v for v, t in zip(values, event_times) if t is not None and t > watermark_us]
        return kept, len(values) - len(kept)

    def _arrange_sides(self, key: Any, values: Sequence[Any], event_times: EventTimes,
                       order: Columns, sides: Sequence[int]
                       ) -> Tuple[List[Any], EventTimes, List[int]]:
        tagged = [(value, side) for value, side in zip(values, sides)]
        arranged, times = self._arrange(key, tagged, event_times, order)
        return [v for v, _ in arranged], times, [s for _, s in arranged]


def _field(value: Any, name: str, default: Any = None) -> Any:
    """``value[name]`` for a mapping, else ``value.<name>`` (a dataclass event)."""
    try:
        return value[name]
    except (KeyError, TypeError, IndexError):
        return getattr(value, name, default)


def sorted_keys(keys: List[Any]) -> List[Any]:
    """Unique keys in the order hosts run them: sorted (by repr when the keys
    are not comparable), so runs are reproducible."""
    unique = list(dict.fromkeys(keys))
    try:
        return sorted(unique)
    except TypeError:
        return sorted(unique, key=lambda k: (type(k).__name__, repr(k)))
