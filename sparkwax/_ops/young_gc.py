"""Fewer young-generation garbage collections while a batch of keys runs.

A host that activates many keys in one batch (the packed host's bucket, the
offline runner's micro-batch) allocates a few containers per key that all
live until the batch commits: with CPython's default threshold (a young
collection every 700 allocations) the collections rescan those survivors
again and again, ~15% of the packed host's Python time at 100k keys
(``benchmarks/host_sim.py``'s ``sw-packed``, in process). Cycles are still
collected, less often; the thresholds are restored after the batch.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def fewer_collections(young: int = 10_000) -> Iterator[None]:
    """Collect the young generation every ``young`` allocations (never more
    often than the current threshold) for the duration of the block.

    >>> before = gc.get_threshold()
    >>> with fewer_collections():
    ...     gc.get_threshold()[0]
    10000
    >>> gc.get_threshold() == before
    True
    """
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
