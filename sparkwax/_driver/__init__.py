"""THE semantics: one activation of one key (docs/semantics.md, "One activation
of one key"; its "Architecture" places this module).

Every host (the Spark per-key and packed hosts, their bounded forms, the
offline runner in both restore modes, ``finish``) builds a driver from the
step's ``sparkwax.step.Step``, hands its one door (``Driver.activate_keys``)
a micro-batch of keys (their stored states and rows) and the host's clocks,
and adds no semantics of its own. The driver applies the step's ``ttl``,
state limit and sides itself (no host wraps a builder). An activation is:

0. clock and order: ``now`` is the watermark in EventTime mode, else the
   processing time (``Driver.now_ms``); rows are put in order (stable, by the
   ``order_by`` columns, else by event time in EventTime mode, nulls first);
1. restore: ``builder(decode(stored))``, or nothing yet for a new key;
2. timer: a restored logic whose ``notify_at()`` is ``<= now`` gets one
   ``on_notify()`` before any item; then, in a step with both timer kinds
   (``Step.two_clocks``: an EventTime step whose logic has
   ``processing_notify_at``), the logic still live (re-read: after a
   DISCARD there is none, and a fresh logic has no deadline) whose
   ``processing_notify_at()`` is ``<=`` the processing time gets one
   ``on_processing_notify()``. Each fires at most once per activation; one
   still due at commit fires at the next activation. Without a processing
   clock (bounded input, ``finish``) deadlines never fire;
3. items in order (late ones dropped in EventTime mode: event time ``<=``
   watermark, or null); after DISCARD the next item gets a fresh
   ``builder(None)``;
4. EOF (bounded input or ``finish``): ``on_eof()`` if logic is live;
5. commit: retained -> ``encode(snapshot())``, ``notify_at()`` as the next
   timer and the timeout a host arms for it (``timers.armed_timeout``), and
   in a two-clock step ``processing_notify_at()`` as the next deadline (a
   host wakes the key when ``timers.Deadlines.due``);
   discarded -> no state;
6. the emits, in order, and the activation's counts (``sparkwax.metrics``).

>>> from sparkwax.step import Step
>>> from sparkwax.testing.reference import Counter
>>> driver = Driver(Step.of(Counter, step_id="count"))
>>> first = driver.activate("k", None, ["a", "b"], now_ms=0)
>>> first.emits, first.snapshot, first.created
([1, 2], 2, 1)
>>> driver.activate("k", first.state, ["c"], now_ms=0).emits
[3]

The package's files are the groups: ``results`` (what goes in and out:
``KeyBatch``, ``Clocks``, ``Activations``, ``Activation``; the counting rule),
``order`` (step 0: the rows' order, lateness), ``steps`` (the bodies of
steps 1-5 and the callbacks), ``routes`` (the one door, ``activate_keys``,
and the plain, general and bounded routes it picks per key) and ``driver``
(``Driver``, and its single-key forms).

>>> acts = driver.activate_keys(KeyBatch(["k", "new"], [["d"], ["x"]],
...                                      stored=[first.state, None]), Clocks(now_ms=0))
>>> acts.emits, acts.metrics.keys_created
([[3], [1]], 1)
"""

from .driver import Driver
from .order import sorted_keys
from .results import (NO_CLOCKS, Activation, Activations, Clocks, Columns, EventTimes, KeyBatch,
                      Restored, Seeded)

__all__ = ["NO_CLOCKS", "Activation", "Activations", "Clocks", "Columns", "Driver", "EventTimes",
           "KeyBatch", "Restored", "Seeded", "sorted_keys"]
