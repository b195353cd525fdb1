"""The hosts only translate: no module of ``sparkwax/engine`` or
``sparkwax/testing`` reaches into the driver's internals or compares times
itself (ordering, lateness, wake-ups and timeouts live in ``_driver/`` and
``timers.py``). Read from the source with ``ast``, so a new module is
checked too."""

import ast
from pathlib import Path

import pytest

from kit import PACKAGE

HOSTS = sorted(p for folder in ("engine", "testing") for p in (PACKAGE / folder).rglob("*.py")
               # what a checkpoint's files mean (pure data, core), not a host
               if "engine/checkpoints/format" not in p.relative_to(PACKAGE).as_posix())
TIME_WORDS = ("now", "watermark", "timer", "armed", "deadline_ms", "event_time")


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


def _name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


@pytest.mark.parametrize("path", HOSTS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_host_uses_only_the_drivers_public_names(path):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_driver"):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{path.name}:{node.lineno} imports {private} from _driver"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and "driver" in _name(node.value).lower():
            assert False, f"{path.name}:{node.lineno} reads driver internals: .{node.attr}"


@pytest.mark.parametrize("path", HOSTS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_host_compares_no_times(path):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
            names = [_name(side) for side in (node.left, *node.comparators)]
            timed = [n for n in names if any(word in n.lower() for word in TIME_WORDS)]
            assert not timed, (f"{path.name}:{node.lineno} compares {timed}: a time rule "
                               "belongs in _driver/ or timers.py")


def test_the_check_sees_a_time_comparison():
    source = "def due(armed, now_ms):\n    return armed < now_ms\n"
    compares = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Compare)]
    assert [_name(side) for side in (compares[0].left, *compares[0].comparators)] == \
        ["armed", "now_ms"]
