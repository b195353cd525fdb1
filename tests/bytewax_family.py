"""Bytewax 0.21.1's operator family and sparkwax's, on the same inputs.

Each case runs one Bytewax operator through Bytewax's own ``run_main`` and
gives the sparkwax builder (plus what a bounded Spark run needs), so
tests/unit/operators/test_bytewax_family.py (offline runner) and
tests/spark/operators/test_bytewax_family_spark.py (bounded Spark) compare per key.
``bytewax_snapshots`` reads what Bytewax's recovery store holds per key before
EOF, for the cases whose snapshots are compared (``Case.snapshots``).

Inputs: two keys, values ``{"ts", "x", "seq"}`` with out-of-order event
times; ``seq`` is the arrival order (Spark replays it with ``order_by``).
Window cases use an event clock / watermark one hour behind, so no value is
late and every window closes at EOF: results and metadata, not lateness, are
compared here (lateness has its own tests).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Dict, List, Optional, Tuple

import sparkwax.operators as ops

from kit import T0

WAIT = timedelta(hours=1)
# (key, minute, x) in arrival order: out of order within windows and sessions
ROWS = [("a", 3, 1), ("b", 1, 10), ("a", 1, 2), ("a", 2, 3), ("b", 12, 11), ("a", 14, 4),
        ("a", 11, 5), ("b", 4, 12), ("a", 30, 6), ("b", 31, 13), ("a", 27, 7), ("b", 13, 14),
        ("a", 45, 8), ("b", 22, 15)]
VALUE_STRUCT = "struct<ts: timestamp, x: long, seq: long>"
VALUE_FIELDS = "ts timestamp, x long, seq long"   # a dict emit fills a row by field name


def items(rows=ROWS):
    return [(k, {"ts": T0 + timedelta(minutes=m), "x": x, "seq": n})
            for n, (k, m, x) in enumerate(rows)]


ITEMS = items()
# two join sides, interleaved one item each as Bytewax's two sources deliver them
LEFT = [pair for n, pair in enumerate(ITEMS) if n % 3 != 2]
RIGHT = [pair for n, pair in enumerate(ITEMS) if n % 3 == 2]


def interleaved():
    """(side, key, value) in the order Bytewax's join sees them, with seq renumbered."""
    out = []
    for n in range(max(len(LEFT), len(RIGHT))):
        for side, pairs in (("left", LEFT), ("right", RIGHT)):
            if n < len(pairs):
                key, value = pairs[n]
                out.append((side, key, dict(value, seq=len(out))))
    return out


@dataclass
class Case:
    name: str
    bytewax: Callable                  # (flow, keyed streams...) -> output stream(s)
    builder: Any                       # sparkwax builder
    schema: str                        # Spark output schema (value part)
    windowed: bool = False
    joined: bool = False
    # (view of Bytewax's snapshot, view of sparkwax's): the parts that must be
    # equal; None: not compared (windows and joins keep Bytewax's private classes)
    snapshots: Optional[Tuple[Callable, Callable]] = None


def _sum_mapper(state, value):
    total = (state or 0) + value["x"]
    return total, total


def _flat_mapper(state, value):
    count = (state or 0) + 1
    return (None if count == 3 else count), ([value["x"], count] if value["x"] % 2 else [])


def _reducer(acc, value):
    return {"ts": max(acc["ts"], value["ts"]), "x": acc["x"] * 10 + value["x"],
            "seq": value["seq"]}


def _x(value):
    return value["x"]


def _append_x(acc, value):
    return acc + [value["x"]]


def _new_list():
    return []


def _concat(a, b):
    return a + b


def _same(snapshot):
    return snapshot


SAME = (_same, _same)
# Bytewax's collect state is its private dataclass _CollectState(acc, timeout_at),
# sparkwax's the tuple (values, deadline); the deadlines differ by design
# (Bytewax: the system clock; sparkwax: the value's time), the lists must not.
COLLECTED = (lambda state: state.acc, lambda snapshot: snapshot[0])


def family_cases() -> List[Case]:
    import bytewax.operators as op

    cases = [
        Case("stateful_map", lambda f, s: op.stateful_map("m", s, _sum_mapper),
             ops.stateful_map(_sum_mapper), "value long", snapshots=SAME),
        Case("stateful_flat_map", lambda f, s: op.stateful_flat_map("m", s, _flat_mapper),
             ops.stateful_flat_map(_flat_mapper), "value long", snapshots=SAME),
        Case("collect", lambda f, s: op.collect("c", s, timedelta(days=1), max_size=3),
             ops.collect(timedelta(days=1), 3), f"value array<{VALUE_STRUCT}>",
             snapshots=COLLECTED),
        Case("fold_final", lambda f, s: op.fold_final("f", s, _new_list, _append_x),
             ops.fold_final(_new_list, _append_x), "value array<long>", snapshots=SAME),
        Case("reduce_final", lambda f, s: op.reduce_final("r", s, _reducer),
             ops.reduce_final(_reducer), VALUE_FIELDS, snapshots=SAME),
        # Bytewax's count_final takes an unkeyed stream and key=: here the pairs
        Case("count_final", lambda f, s: op.count_final("c", s, key=lambda kv: kv[0]),
             ops.count_final(), "value long", snapshots=SAME),
        Case("max_final", lambda f, s: op.max_final("x", s, by=_x),
             ops.max_final(by="x"), VALUE_FIELDS, snapshots=SAME),
        Case("min_final", lambda f, s: op.min_final("n", s, by=_x),
             ops.min_final(by="x"), VALUE_FIELDS, snapshots=SAME),
    ]
    for insert_mode in ("first", "last", "product"):
        for emit_mode in ("complete", "final", "running"):
            cases.append(Case(
                f"join-{insert_mode}-{emit_mode}",
                _bytewax_join(insert_mode, emit_mode),
                ops.joiner(["left", "right"], insert_mode=insert_mode, emit_mode=emit_mode),
                "", joined=True))
    for windower_name in ("tumbling", "sliding", "session"):
        for name, (bw, sw_builder, value_type) in _window_ops(windower_name).items():
            cases.append(Case(f"{name}-{windower_name}", bw, sw_builder,
                              ops.window_schema(value_type), windowed=True,
                              joined=name.startswith("join_window")))
    return cases


def _bytewax_join(insert_mode, emit_mode):
    import bytewax.operators as op

    def build(flow, left, right):
        return op.join("j", left, right, insert_mode=insert_mode, emit_mode=emit_mode)
    return build


def windowers(name):
    from bytewax.operators import windowing as w

    if name == "tumbling":
        return (w.TumblingWindower(timedelta(minutes=10), T0),
                ops.TumblingWindower(timedelta(minutes=10), align_to=T0))
    if name == "sliding":
        return (w.SlidingWindower(timedelta(minutes=10), timedelta(minutes=5), T0),
                ops.SlidingWindower(timedelta(minutes=10), timedelta(minutes=5), align_to=T0))
    return w.SessionWindower(timedelta(minutes=5)), ops.SessionWindower(timedelta(minutes=5))


def _window_ops(windower_name) -> Dict[str, tuple]:
    from bytewax.operators import windowing as w

    bw_windower, sw_windower = windowers(windower_name)
    clock = w.EventClock(lambda v: v["ts"], wait_for_system_duration=WAIT)
    pair_clock = w.EventClock(lambda kv: kv[1]["ts"], wait_for_system_duration=WAIT)
    result = {
        "collect_window": (lambda f, s: w.collect_window("w", s, clock, bw_windower),
                           ops.collect_window(sw_windower), f"array<{VALUE_STRUCT}>"),
        "count_window": (lambda f, s: w.count_window("w", s, pair_clock, bw_windower,
                                                     key=lambda kv: kv[0]),
                         ops.count_window(sw_windower), "long"),
        "fold_window": (lambda f, s: w.fold_window("w", s, clock, bw_windower, _new_list,
                                                   _append_x, _concat),
                        ops.fold_window(sw_windower, _new_list, _append_x, _concat),
                        "array<long>"),
        "reduce_window": (lambda f, s: w.reduce_window("w", s, clock, bw_windower, _reducer),
                          ops.reduce_window(sw_windower, _reducer), VALUE_STRUCT),
        "max_window": (lambda f, s: w.max_window("w", s, clock, bw_windower, by=_x),
                       ops.max_window(sw_windower, by="x"), VALUE_STRUCT),
        "min_window": (lambda f, s: w.min_window("w", s, clock, bw_windower, by=_x),
                       ops.min_window(sw_windower, by="x"), VALUE_STRUCT),
    }
    for insert_mode, emit_mode in (("first", "final"), ("last", "complete"),
                                   ("product", "running")):
        result[f"join_window-{insert_mode}-{emit_mode}"] = (
            _bytewax_join_window(clock, bw_windower, insert_mode, emit_mode),
            ops.join_window(sw_windower, ["left", "right"], insert_mode=insert_mode,
                            emit_mode=emit_mode),
            f"struct<left: {VALUE_STRUCT}, right: {VALUE_STRUCT}>")
    return result


def _bytewax_join_window(clock, windower, insert_mode, emit_mode):
    from bytewax.operators import windowing as w

    def build(flow, left, right):
        return w.join_window("w", clock, windower, left, right, insert_mode=insert_mode,
                             emit_mode=emit_mode)
    return build


# -- running Bytewax ------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def bytewax_result(name: str) -> Dict[Any, list]:
    """``run_bytewax`` of the case called ``name``, run once a process."""
    return run_bytewax(next(case for case in family_cases() if case.name == name))


def run_bytewax(case: Case) -> Dict[Any, list]:
    """Per key: plain emits, or ``(window_id, open, close, value)`` for windows."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    flow = Dataflow(f"compat_{case.name}".replace("-", "_"))
    if case.joined:
        sides = [op.input(name, flow, TestingSource(
            [(k, v) for s, k, v in interleaved() if s == name], batch_size=1))
            for name in ("left", "right")]
    else:
        sides = [op.input("inp", flow, TestingSource(ITEMS, batch_size=1))]
    streams = case.bytewax(flow, *sides)
    down, meta = [], []
    if case.windowed:
        op.output("down", streams.down, TestingSink(down))
        op.output("meta", streams.meta, TestingSink(meta))
    else:
        op.output("down", streams, TestingSink(down))
    run_main(flow)
    if not case.windowed:
        return per_key(down)
    bounds = {(k, wid): (m.open_time, m.close_time) for k, (wid, m) in meta}
    return {k: sorted_windows([(wid, *bounds[(k, wid)], v) for wid, v in vs])
            for k, vs in per_key(down).items()}


def bytewax_snapshots(case: Case, db_dir) -> Dict[Any, Any]:
    """Per key: the snapshot Bytewax's recovery store (in ``db_dir``, empty) holds
    for the case's stateful step after every item, before EOF (the input
    aborts after its last item, as a crash would). Keys the step discarded
    are absent, as in sparkwax's ``RunResult.snapshots``. One-input cases only."""
    import pickle
    import sqlite3
    from pathlib import Path

    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.recovery import RecoveryConfig, init_db_dir
    from bytewax.testing import TestingSink, TestingSource, run_main

    assert not case.joined
    init_db_dir(Path(db_dir), 1)
    flow = Dataflow(f"snap_{case.name}".replace("-", "_"))
    stream = op.input("inp", flow, TestingSource([*ITEMS, TestingSource.ABORT()],
                                                 batch_size=1))
    down = case.bytewax(flow, stream)
    op.output("down", down.down if case.windowed else down, TestingSink([]))
    run_main(flow, epoch_interval=timedelta(0), recovery_config=RecoveryConfig(str(db_dir)))
    latest: Dict[tuple, Optional[bytes]] = {}
    with sqlite3.connect(Path(db_dir) / "part-0.sqlite3") as db:
        for step_id, key, change in db.execute(
                "SELECT step_id, state_key, ser_change FROM snaps WHERE step_id != ? "
                "ORDER BY snap_epoch", (f"{flow.flow_id}.inp",)):
            latest[(step_id, key)] = change
    steps = {step_id for step_id, _ in latest}
    assert len(steps) == 1, f"one stateful step expected, got {sorted(steps)}"
    return {key: pickle.loads(change) for (_, key), change in latest.items()
            if change is not None}


def per_key(pairs) -> Dict[Any, list]:
    grouped: Dict[Any, list] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


def sorted_windows(rows) -> list:
    """A key's window results by window id (stable: a window's emits keep their order)."""
    return sorted(rows, key=lambda row: row[0])


def sparkwax_shape(case: Case, emits: Dict[Any, list]) -> Dict[Any, list]:
    """sparkwax's offline emits in the shape ``run_bytewax`` returns."""
    if not case.windowed:
        return emits
    return {k: sorted_windows([(w.window_id, w.open_time, w.close_time, w.value) for w in ws])
            for k, ws in emits.items()}


def offline_items(case: Case) -> list:
    if case.joined:
        return [(k, ops.Tagged(s, v)) for s, k, v in interleaved()]
    return list(ITEMS)


def side_rows(side: Optional[str] = None) -> list:
    """Rows ``(key, ts, x, seq)`` for a Spark DataFrame (one side's for joins)."""
    if side is None:
        return [(k, v["ts"], v["x"], v["seq"]) for k, v in ITEMS]
    return [(k, v["ts"], v["x"], v["seq"]) for s, k, v in interleaved() if s == side]
