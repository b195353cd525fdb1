"""The offline runner: a key-partitioned streaming query, simulated in-process.

It drives the same ``sparkwax._driver.Driver`` as the Spark engine, mirrors
how Spark schedules activations (keys with data, keys whose timeout fired,
watermarks from earlier batches, a trailing no-data batch) and processes keys
in sorted order so runs are reproducible.

>>> from sparkwax.testing import Batch, Crash, Eof, run
>>> from sparkwax.testing.reference import Counter
>>> result = run(Counter, [Batch([("a", "x"), ("b", "y")]), Crash(), Batch([("a", "z")]), Eof()])
>>> result.by_key
{'a': [1, 2], 'b': [1]}
>>> result.snapshots, result.live_keys
({'a': 2, 'b': 1}, 2)
"""

from __future__ import annotations

from datetime import datetime
from itertools import islice, repeat
from operator import itemgetter
from typing import (TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from .._driver import Activations, Clocks, Driver, KeyBatch, sorted_keys
from ..errors import ConfigError, InputError
from ..logic import Builder, overrides_notify_at
from ..metrics import StepMetrics, add_stages, stage_counts
from ..recovery import encode
from ..step import Restore, Step, StepOptions, as_step, restore_mode
from ..timers import (Deadlines, EventTime, Watermark, from_epoch_ms,
                      require_aware, timeout_fired, to_epoch_ms)
from .._ops.young_gc import fewer_collections
from .result import RunResult, output_checker
from .script import Batch, Crash, Eof, ScriptStep, Tick

if TYPE_CHECKING:
    from typing_extensions import Unpack

_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_TUPLE, _PAIR = {tuple}, {2}
_SORTED = {str, int, bytes}  # key types whose sort order groups exactly as a dict does
_FEW_EMITS = 8  # a key's emits up to which pairing them one by one beats zip(repeat(key), ...)
_CHUNK = 512  # keys per driver call: their results die before the collector sees them
_MANY_KEYS = 1000  # keys in a batch from which the runner sorts rather than groups in a dict
AFTER_EOF = ("Eof() ends a run, as `sparkwax.finish` ends a stream: finish runs on_eof "
             "on the checkpoint's state without changing it, so a stream restarted "
             "after finish continues from the state before EOF. To test that, run the "
             "script without Eof() and continue it; start a new run for a new stream")


class Runner:
    """Run a step offline, batch by batch.

    ``restore="always"`` (default) restores every key from its encoded
    snapshot at every activation, exactly as on Spark; ``"on_crash"`` keeps
    live objects between batches like a long-running Bytewax worker and
    restores only after ``crash()`` (faster; ``check_logic`` compares both).
    The step options are ``sparkwax.stateful``'s (``sparkwax.StepOptions``,
    table in docs/guide.md, "Step options"), or ``builder`` is a ready
    ``sparkwax.Step`` (then give no options). Offline, ``sides`` (the side
    names of a connected step in EventTime mode: one watermark per side, the
    smallest wins; see ``sparkwax.timers``; default: the ``sides`` of a join
    builder) and ``output_schema`` (every emit checked after each activation
    with the Spark hosts' checker: a ``SchemaError`` naming the step, key,
    field and value; None: emits are not checked). ``Eof()`` ends the run.
    ``seed``: ``{key: snapshot}`` the step starts from (``sw.stateful``'s
    ``seed=``): before the first micro-batch each key's snapshot is restored
    and committed as a restart does, at that batch's clock (docs/semantics.md,
    "Seeding a step").
    ``no_data_batches=False``: never add the no-data batch Spark runs when
    the watermark moved (for a script that lists every batch Spark ran, as
    ``replay`` rebuilds them from a checkpoint's logs).
    In EventTime mode the runner keeps two clocks: the watermark (computed
    from the items) and the processing time (``now=`` of ``Batch`` and
    ``Tick``; default: the previous batch's), which only processing deadlines
    (``processing_notify_at``) read.
    """

    def __init__(self, builder: Union[Builder, Step], *, restore: Restore = "always",
                 no_data_batches: bool = True, seed: Optional[Mapping[Any, Any]] = None,
                 **options: Unpack[StepOptions]):
        step = as_step(builder, **options)
        restore = restore_mode(step.step_id, restore)
        self.driver = Driver(step)
        # Whether values carry event times or order_by columns to read per activation.
        self._reads_columns = self.driver.event_column is not None or bool(step.order_by)
        self._reads_watermark = isinstance(step.time, EventTime)
        # Whether a logic may have a timer (else no rebuilt timer can differ from none).
        self._timed = not (step.ttl is None and isinstance(step.builder, type)
                           and not overrides_notify_at(step.builder))
        self.outputs = output_checker(step)
        self.time = step.time
        self.step_id = step.step_id
        self.restore = restore
        self.now_ms = 0                 # processing time, or the watermark
        self.clock = Watermark(step.time.delay_ms, self.driver.side_count)
        self.blobs: Dict[Any, bytes] = {}        # committed snapshots
        self.live: Dict[Any, Any] = {}           # live logic objects (restore="on_crash")
        self.timers: Dict[Any, int] = {}         # key -> next notify_at (ms)
        self.timeouts: Dict[Any, int] = {}       # key -> what Spark would have armed
        self.deadlines: Dict[Any, int] = {}      # key -> next processing_notify_at (ms)
        self.processing_ms = 0          # EventTime mode: the processing clock
        self.result = RunResult(step_id=step.step_id,
                                stage_metrics=stage_counts(self.driver.stage_ids))
        self._pending_tick = False
        self.no_data_batches = no_data_batches  # False: the script lists every batch (replay)
        self.ended = False              # Eof() ran: the run is over
        self._seeds = dict(seed) if seed else None  # applied at the first micro-batch
        self._stages = stage_counts(self.driver.stage_ids)  # this batch's, of a chained step

    # -- steps ----------------------------------------------------------------

    def run(self, script: Sequence[ScriptStep]) -> RunResult:
        for number, step in enumerate(script):
            if self.ended:
                raise ConfigError(f"script step {number} ({type(step).__name__}) comes after "
                                  f"Eof(); {AFTER_EOF}")
            self.play(step)
        return self.process_all_available()

    def play(self, step: ScriptStep) -> None:
        """Run one script step (Batch, Tick, Crash or Eof)."""
        if self.ended:
            raise ConfigError(f"{type(step).__name__} after Eof(); {AFTER_EOF}")
        if isinstance(step, Batch):
            self.batch(step.items, now=step.now)
        elif isinstance(step, Tick):
            self.tick(now=step.now)
        elif isinstance(step, Crash):
            self.crash()
        elif isinstance(step, Eof):
            self.eof()
        else:
            raise ConfigError(f"not a script step: {step!r} (use Batch, Tick, Crash or Eof)")

    def batch(self, items: Sequence[Tuple[Any, Any]], now: Optional[datetime] = None) -> None:
        """A micro-batch with data."""
        self._refuse_after_eof("Batch")
        self._set_now(now)
        self._apply_seeds()
        # every item a (key, value) pair, checked at C level (not item by item)
        pairs = bool(items) and set(map(type, items)) == _TUPLE and set(map(len, items)) == _PAIR
        runs = self._sorted_runs(items) if pairs else None
        if runs is not None:
            self._end_batch(self._activate_keys(runs))
            return
        groups: Dict[Any, List[Any]] = {}
        for pair in items:
            if not pairs and (type(pair) is not tuple or len(pair) != 2):
                raise InputError(self.step_id, None, "input", pair,
                                 "script items must be (key, value) pairs")
            group = groups.get(pair[0])
            if group is None:
                groups[pair[0]] = [pair[1]]
            else:
                group.append(pair[1])
        due = [k for k in self._due() if k not in groups]
        self._end_batch(self._activate_keys(
            (key, groups.get(key, ())) for key in sorted_keys(list(groups) + due)))
        self._advance_watermark(groups)

    def _sorted_runs(self, items: Sequence[Tuple[Any, Any]]
                     ) -> Optional[Iterator[Tuple[Any, List[Any]]]]:
        """The batch as ``(key, values)`` in key order, values in arrival
        order, from one stable sort: the same activations as grouping in a
        dict, without a list per key living through the batch (thousands of
        such survivors per batch made Python's full garbage collections run
        every batch, half the runner's time at 10k keys). None: the general
        path (EventTime, keys other than str/int/bytes,
        a timer due at a key without data, or few keys: then a dict is
        faster than the sort and leaves few survivors). ``items``: (key,
        value) pairs, checked by the caller."""
        if self._reads_watermark:
            return None
        present = set(map(_FIRST, items))
        if len(present) < _MANY_KEYS or not set(map(type, present)) <= _SORTED:
            return None
        try:
            ordered = sorted(items, key=_FIRST)
        except TypeError:  # str and int keys in one batch
            return None
        if self.timeouts:
            if any(key not in present and timeout_fired(at, self.now_ms)
                   for key, at in self.timeouts.items()):
                return None
        return _runs(ordered)

    def tick(self, now: Optional[datetime] = None) -> None:
        """A micro-batch without data: only keys whose timeout fired run."""
        self._refuse_after_eof("Tick")
        self._set_now(now)
        self._apply_seeds()
        self._pending_tick = False
        self._end_batch(self._activate_keys((key, ()) for key in sorted_keys(self._due())))

    def crash(self) -> None:
        """Drop every live object; keys restore from their committed snapshots.
        The watermark survives; each input's max event time does not, as in
        Spark (``Watermark.restart``)."""
        self._refuse_after_eof("Crash")
        self.clock.restart()
        for key, logic in self.live.items():
            self.blobs[key] = self.driver.encode_live(key, logic)
        self.live.clear()

    def eof(self) -> None:
        """End of input: a trailing no-data batch if time moved, then on_eof per
        key (counted as one more entry of ``batch_metrics``). It ends the run:
        no step may follow (see ``AFTER_EOF``)."""
        self._refuse_after_eof("Eof")
        self._apply_seeds()
        self._flush_tick()
        self.ended = True
        self._end_batch(self._activate_keys(
            ((key, ()) for key in sorted_keys(list(self.blobs) + list(self.live))), eof=True))

    def set_watermark(self, value_ms: int) -> None:
        """An ``EventTime`` step's watermark from outside, for the batches to
        come: ``run_flow`` gives every step of a query the query's one
        watermark (``clock`` still records this step's inputs)."""
        self.now_ms = self.clock.value_ms = value_ms
        self._pending_tick = False

    def process_all_available(self) -> RunResult:
        """The result so far, after the trailing no-data batch Spark would run
        (as Spark's ``query.processAllAvailable()``; no ``on_eof``: that is
        ``Eof()``). A live logic's snapshot (``restore="on_crash"``) is
        encoded here, once: one that cannot be pickled is a SnapshotError, as
        at Spark's first commit, even in a run without ``Crash()``."""
        self._apply_seeds()
        self._flush_tick()
        result = self.result
        snapshots: Dict[Any, Any] = {}
        result.snapshots = snapshots
        blobs, live, decode = self.blobs, self.live, self.driver.decode
        for key in sorted_keys(list(blobs) + list(live)):
            logic = live.get(key)  # a live logic object, never None
            if logic is not None:
                snapshot = self.driver.snapshot(key, logic)
                encode(snapshot, step_id=self.step_id, key=key)
                snapshots[key] = snapshot
            else:
                snapshots[key] = decode(key, blobs[key])
        result.timers = {k: from_epoch_ms(t) for k, t in self.timers.items()}
        result.deadlines = {k: from_epoch_ms(t) for k, t in self.deadlines.items()}
        result.lost_state = list(self.driver.lost_state)
        return result

    # -- internals ------------------------------------------------------------

    def _apply_seeds(self) -> None:
        """The seeded keys' states and timers, once, at the first batch's clock."""
        seeds, self._seeds = self._seeds, None
        for key in sorted_keys(list(seeds or ())):
            blob = encode(seeds[key], step_id=self.step_id, key=key)  # type: ignore[index]
            state, timer, armed, deadline = self.driver.seed(
                key, blob, self.now_ms, self.processing_ms if self.driver.two_clocks else None)
            self.blobs[key] = state
            if timer is not None and armed is not None:
                self.timers[key], self.timeouts[key] = timer, armed
            if deadline is not None:
                self.deadlines[key] = deadline

    def _refuse_after_eof(self, what: str) -> None:
        if self.ended:
            raise ConfigError(f"{what} after Eof(); {AFTER_EOF}")

    def _due(self) -> List[Any]:
        """Keys whose timeout Spark would fire in this micro-batch (a step
        with both timer kinds: whose timer or deadline is due, see
        ``timers.Deadlines``)."""
        if not self.driver.two_clocks:
            return [k for k, t in self.timeouts.items() if timeout_fired(t, self.now_ms)]
        timers, deadlines = self.timers, self.deadlines
        return [k for k in dict.fromkeys([*timers, *deadlines])
                if Deadlines.due(timers.get(k), deadlines.get(k), self.now_ms,
                                 self.processing_ms)]

    def _activate_keys(self, runs: Iterable[Tuple[Any, Sequence[Any]]],
                       eof: bool = False) -> StepMetrics:
        """Activate each ``(key, values)`` in order and commit its state,
        timer and outputs; the micro-batch's counts. The keys go through the
        driver's door ``_CHUNK`` at a time, each chunk committed before the
        next runs: a whole batch's per-key results alive at once made
        Python's collector run four times as often (a third of the runner's
        time at 100k keys). What ran before a key's error stays committed
        and counted, as it stays in the outputs."""
        runs = iter(runs)
        counts = StepMetrics()
        self._stages = stage_counts(self.driver.stage_ids)
        clocks = Clocks(self.now_ms, None if eof else self.processing_ms)  # finish: no processing
        with fewer_collections():
            while True:
                pairs = list(islice(runs, _CHUNK))
                if not pairs:
                    return counts
                counts += self._activate_chunk(pairs, clocks, eof)

    def _activate_chunk(self, pairs: List[Tuple[Any, Sequence[Any]]], clocks: Clocks,
                        eof: bool) -> StepMetrics:
        """One ``Driver.activate_keys`` call over ``pairs``, then the commit
        of each key that ran (all of them, or those before a key's error)."""
        blobs, always = self.blobs, self.restore == "always"
        keys = list(map(_FIRST, pairs))
        batch = KeyBatch(
            keys, list(map(_SECOND, pairs)),
            list(map(blobs.get, keys)) if always or blobs else None,
            # a logic without notify_at cannot lose its timer: none kept
            list(map(self.timers.get, keys)) if self._timed else None,
            logics=None if always else list(map(self.live.get, keys)), eof=eof,
            read_columns=self._reads_columns)
        del pairs
        acts = Activations()
        try:
            self.driver.activate_keys(batch, clocks, acts)
        finally:  # what ran before an error is committed (the first error wins)
            self._commit_keys(keys, acts, always)
            add_stages(self._stages, acts.stages)
        return acts.metrics

    def _commit_keys(self, keys: Sequence[Any], acts: Activations, always: bool) -> None:
        """Commit each key ``acts`` holds: its state (or live logic), timer,
        deadline and outputs (checked first). The loop is the runner's hot
        path: per key it costs a few dict operations."""
        blobs, live, timers, timeouts, deadlines = (self.blobs, self.live, self.timers,
                                                    self.timeouts, self.deadlines)
        append, checker = self.result.outputs.append, self.outputs
        extend, two_clocks = self.result.outputs.extend, self.driver.two_clocks
        count = 0
        try:
            for key, out, state, timer, armed, deadline, logic in zip(
                    keys, acts.emits, acts.states, acts.timers, acts.armed, acts.deadlines,
                    repeat(None) if always else acts.logics):
                if checker is not None and out:  # before anything is committed
                    checker.check(self.step_id, key, out)
                if always:
                    if state is None:
                        blobs.pop(key, None)
                    else:
                        blobs[key] = state
                else:
                    if blobs:
                        blobs.pop(key, None)
                    if logic is None:
                        live.pop(key, None)
                    else:
                        live[key] = logic
                if timer is not None and armed is not None:
                    timers[key] = timer
                    timeouts[key] = armed
                elif timers:
                    timers.pop(key, None)
                    timeouts.pop(key, None)
                if two_clocks:  # a builder function: known from its first logic
                    if deadline is None:
                        deadlines.pop(key, None)
                    else:
                        deadlines[key] = deadline
                if len(out) > _FEW_EMITS:  # one C-level pass for a key's many emits
                    extend(zip(repeat(key), out))
                else:  # cheaper than extend(zip(...)) for a few
                    for emit in out:
                        append((key, emit))
                count += 1
        finally:
            self.result.late += acts.metrics.rows_late
            self.result.activations += count

    def _end_batch(self, counts: StepMetrics) -> None:
        self.result.batch_metrics.append(counts)
        self.result.metrics += counts
        if self._stages:
            self.result.batch_stage_metrics.append(self._stages)
            add_stages(self.result.stage_metrics, self._stages.values())

    def _set_now(self, now: Optional[datetime]) -> None:
        """``now=``: the processing time (in EventTime mode, where ``now_ms``
        is the watermark, the second clock, read by processing deadlines)."""
        if now is not None:
            try:
                moment = require_aware(now)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"now= must be an aware datetime: {error} ({now!r})") from None
            if isinstance(self.time, EventTime):
                self.processing_ms = to_epoch_ms(moment)
            else:
                self.now_ms = to_epoch_ms(moment)

    def _advance_watermark(self, groups: Dict[Any, List[Any]]) -> None:
        """Spark's watermark after a batch: per input (side), then the minimum
        (null event times do not move it)."""
        if not isinstance(self.time, EventTime):
            return
        side_of, see, event_time_of = self.driver.side_of, self.clock.see, \
            self.driver.event_time_of
        for key, values in groups.items():
            for value in values:
                moment = event_time_of(key, value)
                if moment is not None:
                    see(moment, side_of(key, value))
        if self.clock.advance_moved():
            self.now_ms = self.clock.value_ms
            self._pending_tick = self.no_data_batches

    def _flush_tick(self) -> None:
        if self._pending_tick:
            self.tick()


def _runs(ordered: List[Tuple[Any, Any]]) -> Iterator[Tuple[Any, List[Any]]]:
    """``(key, values)`` of pairs sorted by key (not empty), as ``groupby``
    would give them: one plain loop costs less than a grouper and a ``map``
    per key when most keys have one or two values."""
    pairs = iter(ordered)
    key, value = next(pairs)
    group = [value]
    for next_key, value in pairs:
        if next_key == key:
            group.append(value)
        else:
            yield key, group
            key, group = next_key, [value]
    yield key, group


def run(builder: Union[Builder, Step], script: Sequence[ScriptStep], *,
        restore: Restore = "always", seed: Optional[Mapping[Any, Any]] = None,
        **options: Unpack[StepOptions]) -> RunResult:
    """Run ``script`` (Batch/Tick/Crash/Eof steps) through ``builder``'s logic
    (or a ready ``sparkwax.Step``). ``restore``, ``seed`` and the step
    options are the Runner's (docs/guide.md, "Step options"); with
    ``output_schema`` every emit is checked as the Spark hosts check it."""
    return Runner(builder, restore=restore, seed=seed, **options).run(script)
