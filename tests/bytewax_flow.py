"""A Bytewax 0.21.1 dataflow of two stateful steps, re-keyed in between, and
its sparkwax port (docs/semantics.md, "A dataflow of two steps").

The dataflow, as a Bytewax user writes it: events ``{user, region, ts,
page}`` -> ``op.key_on`` by user -> ``op.stateful_flat_map`` (a user's first
visit to each page: a dedupe of (user, page)) -> ``op.key_on`` by region ->
``fold_window`` per region over 10-minute tumbling windows of event time
(``EventClock``, 5 minutes' wait): the window's first visits and their users
in time order -> output.

The port runs the same three functions (``first_visit``, ``new_tally``,
``add_visit``; ``merge_tallies`` for Bytewax's required merger) in sparkwax's
operators of the same names, one ``Step`` each: ``plan`` is the Spark form
(``sw.stateful`` twice, one streaming query on Spark 4.0+), ``offline`` the
offline one (``run_flow``; ``by_region`` is what ``plan`` does between the
steps, which on Spark is the first step's output columns).

Used by tests/unit/testing/test_bytewax_flow.py (offline, against Bytewax's
``run_main``) and tests/spark/planning/test_bytewax_flow_spark.py (one
streaming query). No pyspark here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Dict, List, Optional, Sequence, Tuple

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.testing import Batch, Crash, Eof, Tick, run_flow

from kit import T0

WAIT = timedelta(minutes=5)        # EventClock's wait_for_system_duration = the watermark delay
LENGTH = timedelta(minutes=10)     # the tumbling windows
INPUT = "user string, region string, ts timestamp, page long"   # Spark's input rows
SECOND = timedelta(seconds=1)
REGIONS = {"ann": "eu", "bob": "eu", "cho": "ap", "dan": "us", "eve": "us", "fay": "ap"}


# -- the functions both run ----------------------------------------------------------------


def first_visit(pages, event):
    """``stateful_flat_map``'s mapper: a user's pages so far and an event ->
    the pages and the event if it is the user's first visit to its page."""
    pages = pages or set()
    if event["page"] in pages:
        return pages, []
    pages.add(event["page"])
    return pages, [event]


def new_tally():
    return {"visits": 0, "users": []}


def add_visit(tally, event):
    return {"visits": tally["visits"] + 1, "users": tally["users"] + [event["user"]]}


def merge_tallies(older, newer):    # Bytewax's fold_window requires one (sessions merge)
    return {"visits": older["visits"] + newer["visits"], "users": older["users"] + newer["users"]}


# -- the Bytewax original ------------------------------------------------------------------


def bytewax_dataflow(events: Sequence[dict], out: list, meta: list, late: list,
                     firsts_out: Optional[list] = None, *, eof: bool = True) -> Any:
    """The original over ``events`` (one item a batch): ``(region, (window_id,
    tally))`` into ``out``, the windows' metadata into ``meta``, the late
    values into ``late``, and (a tap, not part of the dataflow's logic) the
    first visits by user into ``firsts_out``. ``eof=False``: the input
    aborts after its last event (no EOF flush)."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators.windowing import EventClock, TumblingWindower, fold_window
    from bytewax.testing import TestingSink, TestingSource

    flow = Dataflow("first_visits_by_region")
    items: List[Any] = list(events) if eof else [*events, TestingSource.ABORT()]
    stream = op.input("events", flow, TestingSource(items))
    by_user = op.key_on("by_user", stream, lambda e: e["user"])
    firsts = op.stateful_flat_map("first_visits", by_user, first_visit)
    if firsts_out is not None:
        op.output("firsts", firsts, TestingSink(firsts_out))
    by_region = op.key_on("by_region", op.map("drop_user", firsts, lambda kv: kv[1]),
                          lambda e: e["region"])
    clock = EventClock(lambda e: e["ts"], wait_for_system_duration=WAIT)
    windows = fold_window("visits", by_region, clock, TumblingWindower(LENGTH, T0),
                          new_tally, add_visit, merge_tallies)
    op.output("out", windows.down, TestingSink(out))
    op.output("meta", windows.meta, TestingSink(meta))
    op.output("late", windows.late, TestingSink(late))
    return flow


@dataclass
class BytewaxRun:
    firsts: Dict[str, list]    # per user, the first step's emits minus their user field
    windows: Dict[str, list]   # per region, ``windows``' rows
    late: Dict[str, list]      # per region, ``(window_id, event)`` of the late values


def run_bytewax(events: Sequence[dict], *, eof: bool = True) -> BytewaxRun:
    """Bytewax's ``run_main`` of the original (first visits by user, as the
    port's first step emits them: ``region, ts, page``)."""
    from bytewax.testing import run_main

    out: list = []
    meta: list = []
    late: list = []
    firsts: list = []
    run_main(bytewax_dataflow(events, out, meta, late, firsts, eof=eof))
    bounds = {(region, wid): (m.open_time, m.close_time) for region, (wid, m) in meta}
    by_region: Dict[str, list] = {}
    for region, (wid, tally) in out:
        by_region.setdefault(region, []).append((wid, *bounds[(region, wid)], tally))
    by_user: Dict[str, list] = {}
    for user, event in firsts:
        by_user.setdefault(user, []).append({k: v for k, v in event.items() if k != "user"})
    late_by_region: Dict[str, list] = {}
    for region, pair in late:
        late_by_region.setdefault(region, []).append(pair)
    return BytewaxRun(by_user, {region: windows(rows) for region, rows in by_region.items()},
                      late_by_region)


# -- the port ------------------------------------------------------------------------------

FIRST_VISITS = sw.Step.of(ops.stateful_flat_map(first_visit), step_id="first_visits",
                          output_schema="region string, ts timestamp, page long")
VISITS = sw.Step.of(
    ops.fold_window(ops.TumblingWindower(LENGTH, align_to=T0), new_tally, add_visit,
                    merge_tallies),
    step_id="visits", time=sw.EventTime("ts", watermark=WAIT),
    output_schema=ops.window_schema("struct<visits long, users array<string>>"))


def plan(stream: Any, host: str = "per_key", buckets: Optional[int] = None) -> Any:
    """The port on Spark: ``user, region, ts, page`` rows in, ``region,
    window_id, open_time, close_time, value, late`` rows out."""
    firsts = sw.stateful(stream, key="user", step=FIRST_VISITS, host=host, buckets=buckets)
    return sw.stateful(firsts, key="region", step=VISITS, host=host, buckets=buckets)


def by_region(user: str, event: dict) -> Tuple[str, dict]:
    """Between the steps (offline): the first step's output row ``user,
    region, ts, page`` keyed by region, as ``plan``'s second ``sw.stateful``
    reads it."""
    return event["region"], {"user": user, "ts": event["ts"], "page": event["page"]}


def port_items(events: Sequence[dict]) -> List[Tuple[str, dict]]:
    """Events as the port's first step gets them: keyed by user, the other
    columns as the value (as on Spark)."""
    return [(e["user"], {k: v for k, v in e.items() if k != "user"}) for e in events]


def script(batches: Sequence[Sequence[dict]], *, eof: bool, crash_after: Sequence[int] = ()
           ) -> List[Any]:
    """The port's script of ``batches`` of events: a ``Batch`` each, then
    ``Eof()`` if ``eof``. After each batch number in ``crash_after``, a
    ``Tick()`` and a ``Crash()``: Spark's harness stops a query after
    ``processAllAvailable``, which runs the no-data batch that fires the
    timers the last batch made due (the harness skips the Tick: Spark runs
    it itself)."""
    steps: List[Any] = []
    for number, batch in enumerate(batches):
        steps.append(Batch(port_items(batch)))
        if number in crash_after:
            steps += [Tick(), Crash()]
    if eof:
        steps.append(Eof())
    return steps


def offline(batches: Sequence[Sequence[dict]], *, eof: bool, crash_after: Sequence[int] = ()
            ) -> Any:
    """``run_flow`` of the port over ``script(batches, ...)``: one
    ``RunResult`` per step."""
    return run_flow(script(batches, eof=eof, crash_after=crash_after),
                    FIRST_VISITS, by_region, VISITS)


# -- shapes --------------------------------------------------------------------------------


def windows(rows: Sequence[tuple]) -> list:
    """A region's ``(window_id, open_time, close_time, tally)`` rows by window id
    (a window has one result; Bytewax's EOF flush and Spark's batches may
    emit two windows of a key in either order)."""
    return sorted(rows, key=lambda row: row[0])


def sparkwax_windows(result: Any) -> Dict[str, list]:
    """A run's window results in ``run_bytewax``'s shape; a late report fails."""
    shaped: Dict[str, list] = {}
    for region, out in result.outputs:
        if not isinstance(out, ops.WindowOut):     # a Spark row: the schema's fields
            out = ops.WindowOut(*out)
        assert out.late is None, f"a late value reported for {region}: {out}"
        shaped.setdefault(region, []).append(
            (out.window_id, out.open_time, out.close_time, out.value))
    return {region: windows(rows) for region, rows in shaped.items()}


# -- the events ----------------------------------------------------------------------------


def batches(count: int = 6, size: int = 10, seed: int = 41) -> List[List[dict]]:
    """``count`` batches of events in arrival order. Each batch: ``size``
    visits about one a minute, each up to four minutes behind the latest
    before it (out of order inside windows); from the second batch on, first
    two more visits of new pages: one late, 10 to 50 s more than ``WAIT``
    behind its region's latest first visit so far (late in both systems:
    behind Bytewax's clock of the region, and behind Spark's watermark, the
    batches before's latest minus ``WAIT``), and one nearly late, 10 to 50 s
    less than ``WAIT`` behind the latest first visit of any region (on time
    in both; a duplicate visit never reaches the window step). No two events
    share a time (a window folds in time order), and no time sits on a whole
    minute, so no window closes at exactly a watermark, and Bytewax's clock,
    which also moves with the system time, is seconds away from closing a
    window early."""
    rng = random.Random(seed)
    users = sorted(REGIONS)
    out: List[List[dict]] = []
    used = set()
    number = 0

    def fresh(stamp, step=timedelta(0)):
        while stamp in used or stamp.second == 0:   # only late ones move (a second)
            assert step, stamp
            stamp += step
        used.add(stamp)
        return stamp

    for batch_number in range(count):
        batch: List[dict] = []
        if out:
            before = _first_visits([e for b in out for e in b])   # what the window step saw
            latest = {r: max(e["ts"] for e in before if e["region"] == r)
                      for r in {e["region"] for e in before}}
            late_user, near_user = rng.sample(users, 2)
            late = latest[REGIONS[late_user]] - WAIT - timedelta(seconds=rng.randrange(10, 50))
            near = max(latest.values()) - WAIT + timedelta(seconds=rng.randrange(10, 50))
            for user, stamp, step in ((late_user, late, -SECOND), (near_user, near, SECOND)):
                batch.append({"user": user, "region": REGIONS[user], "ts": fresh(stamp, step),
                              "page": 100 + batch_number})
        for _ in range(size):
            while True:
                stamp = T0 + timedelta(minutes=max(0, number - rng.randrange(4)),
                                       seconds=rng.randrange(1, 51))
                if stamp not in used:
                    break
            user = rng.choice(users)
            batch.append({"user": user, "region": REGIONS[user], "ts": fresh(stamp),
                          "page": rng.randrange(1, 13)})
            number += 1
        out.append(batch)
    return out


def _first_visits(events: Sequence[dict]) -> List[dict]:
    seen = set()
    firsts = []
    for event in events:
        if (event["user"], event["page"]) not in seen:
            seen.add((event["user"], event["page"]))
            firsts.append(event)
    return firsts


def far_batch(after: Sequence[dict]) -> List[dict]:
    """One new visit per region a day after ``after``'s latest event: moves
    every region's watermark (Bytewax's per key, Spark's per query) past
    every window ``after`` opened. Its own windows stay open."""
    latest = max(e["ts"] for e in after)
    one_user = {region: user for user, region in sorted(REGIONS.items())}
    return [{"user": one_user[region], "region": region,
             "ts": latest + timedelta(days=1, minutes=n), "page": 1000 + n}
            for n, region in enumerate(sorted(one_user))]
