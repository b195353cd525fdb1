"""Which cases of a `lines` test the compatibility tier runs on an older line.

The whole suite runs every case on the newest line. On the older lines a
parametrized test marked `lines` runs a share of its cases: the lines take
turns, so that each line runs at least one case of every such test and each
case runs on at least one older line. `@pytest.mark.lines(every=True)` runs
every case on every line (where each case touches a different line-specific
path: Arrow types, pip's resolution); `since="4.0"` takes turns among the
lines a test can run on at all; tests marked with one `pool="kill"` take
turns as one test (each line runs one of them). docs/testing.md, "Other
Spark lines".

>>> turns(5, "4.0")   # five cases over four lines: 4.0 the second (3.5 the first and fifth)
[1]
>>> [turns(2, line) for line in OLDER_LINES]
[[0], [1], [0], [1]]
>>> turns(3, "4.3")   # not an older line: every case
[0, 1, 2]
"""

from __future__ import annotations

import zlib
from typing import List, Sequence

# the Makefile's OLDER_LINES (tests/unit/test_tier_turns.py holds them equal): the tier runs on each
OLDER_LINES = ("3.5", "4.0", "4.1", "4.2")


def _version(line: str) -> tuple:
    return tuple(int(part) for part in line.split("."))


def turns(count: int, line: str, since: str = "3.5", shift: int = 0) -> List[int]:
    """The indexes of a test's ``count`` cases that ``line`` runs; ``shift``
    moves the turns along (each test its own, so that one line does not run
    the first host of every test)."""
    lines: Sequence[str] = [older for older in OLDER_LINES
                            if _version(older) >= _version(since)]
    if line not in lines:
        return list(range(count))
    many = len(lines)
    turn = (lines.index(line) + shift) % many
    if count < many:
        return [turn % count]
    return [case for case in range(count) if case % many == turn]


def _since(item) -> str:
    return item.get_closest_marker("lines").kwargs.get("since", "3.5")


def select(items: list, line: str) -> tuple:
    """Split collected items into (kept, deselected) for the tier on ``line``.

    A test's cases take turns; tests marked with the same ``pool=`` take
    turns as one (each line runs one kill -9 test, say). A case of a test
    that cannot run on ``line`` (its ``since``) is kept: it skips itself."""
    groups: dict = {}
    for item in items:
        marker = item.get_closest_marker("lines")
        if marker is None or marker.kwargs.get("every"):
            continue
        pool = marker.kwargs.get("pool")
        if pool is None and not hasattr(item, "callspec"):
            continue
        groups.setdefault(pool or item.nodeid.split("[")[0], []).append(item)
    dropped = set()
    for name, group in groups.items():
        eligible = [item for item in group if _version(_since(item)) <= _version(line)]
        if not eligible:
            continue
        since = max((_since(item) for item in eligible), key=_version)
        kept = set(turns(len(eligible), line, since, zlib.crc32(name.encode())))
        dropped.update(id(item) for index, item in enumerate(eligible) if index not in kept)
    return ([item for item in items if id(item) not in dropped],
            [item for item in items if id(item) in dropped])
