"""The compatibility tier's turns (tests/tier.py): every line runs a case of
each test, every case runs on an older line."""

import doctest
import re

from hypothesis import given, strategies as st

import tier
from kit import REPO


@given(count=st.integers(1, 40), shift=st.integers(0, 2**32),
       since=st.sampled_from(tier.OLDER_LINES))
def test_each_line_runs_a_case_and_each_case_runs_on_a_line(count, shift, since):
    lines = tier.OLDER_LINES[tier.OLDER_LINES.index(since):]
    runs = {line: tier.turns(count, line, since, shift) for line in lines}
    assert all(runs.values()), runs
    assert set().union(*runs.values()) == set(range(count))
    if count >= len(lines):  # no case twice
        assert sum(len(cases) for cases in runs.values()) == count


def test_a_line_outside_the_turns_runs_every_case():
    assert tier.turns(3, "4.3") == [0, 1, 2]
    assert tier.turns(3, "3.5", since="4.0") == [0, 1, 2]  # where the test skips itself


def test_a_shift_moves_the_turn():
    assert [tier.turns(2, line) for line in tier.OLDER_LINES] == [[0], [1], [0], [1]]
    assert [tier.turns(2, line, shift=1) for line in tier.OLDER_LINES] == [[1], [0], [1], [0]]


class _Marker:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class _Item:
    """What tier.select reads of a pytest item."""

    def __init__(self, nodeid, **lines):
        self.nodeid, self._marker, self.callspec = nodeid, _Marker(**lines), object()

    def get_closest_marker(self, name):
        return self._marker if name == "lines" else None


def test_a_pool_runs_one_of_its_tests_per_line_and_each_on_a_line():
    items = [_Item("a.py::test_kill[one]", pool="kill"), _Item("a.py::test_kill[two]", pool="kill"),
             _Item("b.py::test_flow[x]", pool="kill", since="4.0"),
             _Item("b.py::test_flow[y]", pool="kill", since="4.0"),
             _Item("c.py::test_every[x]", every=True), _Item("c.py::test_every[y]", every=True)]
    ran = set()
    for line in tier.OLDER_LINES:
        kept, dropped = tier.select(items, line)
        assert len(kept) + len(dropped) == len(items)
        assert {item.nodeid for item in kept} >= {"c.py::test_every[x]", "c.py::test_every[y]"}
        runnable = [item for item in kept[:-2] if line != "3.5" or "flow" not in item.nodeid]
        assert runnable, line
        ran.update(item.nodeid for item in runnable)
    assert ran == {item.nodeid for item in items[:4]}


def test_the_lines_are_the_makefiles_and_the_examples_run():
    older = re.search(r"^OLDER_LINES \?= (.+)$", (REPO / "Makefile").read_text(), re.M)
    assert older is not None and tuple(older.group(1).split()) == tier.OLDER_LINES
    failures, tried = doctest.testmod(tier)
    assert failures == 0 and tried > 0
