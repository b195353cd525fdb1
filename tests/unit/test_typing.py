"""The package type-checks (mypy over ``sparkwax/`` is clean with setup.cfg's
``[mypy]`` section), the core modules pass ``mypy --strict`` (``STRICT_CORE``),
and so do the operators, the engine and the testing package
(``STRICT_PACKAGES``); type checkers see the Spark entry points that
``sparkwax/__init__.py`` loads lazily (through ``TYPE_CHECKING`` imports), so
a wrong keyword to ``sw.stateful`` is an error in the user's editor, and a
user program importing ``sparkwax``, ``sparkwax.operators`` and
``sparkwax.testing`` passes ``mypy --strict`` (``USER_PROGRAM``), with the
operators' types checked (``OPERATOR_MISTAKES``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit import REPO

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def mypy(*args: str) -> subprocess.CompletedProcess:
    """``python -m mypy ARGS`` from the repository (so setup.cfg's [mypy] applies
    and its .mypy_cache makes reruns fast)."""
    env = dict(os.environ, MYPYPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_package_is_clean():
    done = mypy("sparkwax")
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


# The core (docs/semantics.md "Architecture": every module
# of it is here, and a new one joins once it is clean), checked with
# `mypy --strict`, and sparkwax.frames (the surface's DataFrame operators).
# These modules are also checked by test_package_is_clean, without --strict, where
# an ignore that only strict needs (say [no-any-return]) is reported as unused:
# prefer a typed local (`x: T = ...; return x`) or a cast, else list `unused-ignore`
# among the ignore's codes.
STRICT_CORE = [
    "sparkwax._driver",
    "sparkwax.engine.checkpoints.format.metadata_logs",
    "sparkwax.builders",
    "sparkwax.clock",
    "sparkwax.errors",
    "sparkwax.expiry",
    "sparkwax.frames",
    "sparkwax.limits",
    "sparkwax.logic",
    "sparkwax.metrics",
    "sparkwax.engine.checkpoints.format.paths",
    "sparkwax.recovery",
    "sparkwax.schema",
    "sparkwax.schema.emit_check",
    "sparkwax.schema.ddl",
    "sparkwax.schema.sql_types",
    "sparkwax.sides",
    "sparkwax.step",
    "sparkwax._ops.tables",
    "sparkwax.timers",
]

# Modules a strict module imports are read for their types but not reported
# (--follow-imports=silent): each module is strict on its own, whatever its
# imports are. Both strict runs share one cache (same options).
STRICT = ("--strict", "--follow-imports=silent", "--cache-dir", ".mypy_cache/strict")


def test_core_is_strict():
    done = mypy(*STRICT, *(arg for name in STRICT_CORE for arg in ("-m", name)))
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


# Whole packages (a new module is checked as it arrives), and the public
# package itself (its lazy __getattr__, its literal __all__).
STRICT_PACKAGES = ["sparkwax.operators", "sparkwax.engine", "sparkwax.testing"]


def strict_package_modules() -> list:
    modules = []
    for package in STRICT_PACKAGES:
        folder = REPO.joinpath(*package.split("."))
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules.append(name)
    return modules


def test_packages_are_strict():
    modules = ["sparkwax", *strict_package_modules()]
    assert {"sparkwax.engine.planning.plan", "sparkwax.engine.checkpoints.state.frame", "sparkwax.operators.final",
            "sparkwax.operators.windows.core", "sparkwax.testing.reference"} <= set(modules)
    done = mypy(*STRICT, *(arg for name in modules for arg in ("-m", name)))
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


def test_public_all_lists_are_literal():
    """``__all__`` of every public package is a list display of strings, the
    form type checkers read (``sorted([...])`` is not: ``from sparkwax.operators
    import fold_final`` was then "not explicitly exported" under --strict)."""
    import ast

    for package in ("sparkwax", "sparkwax.operators", "sparkwax.operators.windows",
                    "sparkwax.testing", "sparkwax.testing.strategies", "sparkwax.engine",
                    "sparkwax.schema"):
        path = REPO.joinpath(*package.split("."), "__init__.py")
        tree = ast.parse(path.read_text())
        found = [node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and any(isinstance(t, ast.Name) and t.id == "__all__"
                         for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
        assert len(found) == 1, f"{package}: one __all__ assignment expected"
        value = found[0]
        assert isinstance(value, ast.List) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts), \
            f"{package}.__all__ must be a list display of string literals"
        assert not any(isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                       and isinstance(node.value.func, ast.Attribute)
                       and isinstance(node.value.func.value, ast.Name)
                       and node.value.func.value.id == "__all__" for node in tree.body), \
            f"{package}: __all__ is changed after its assignment"


def test_py_typed_marker_ships():
    assert (REPO / "sparkwax" / "py.typed").is_file()
    assert "sparkwax = py.typed" in (REPO / "setup.cfg").read_text()


USER_CODE = textwrap.dedent("""
    from pyspark.sql import DataFrame

    import sparkwax as sw
    from sparkwax import (StatefulLogic, finish, local_session, start, stateful,
                          stateful_batch)


    class Counter(StatefulLogic[int, int, int]):
        def __init__(self, resume: int | None = None) -> None:
            self.n = resume or 0

        def on_item(self, value: int) -> tuple[list[int], bool]:
            self.n += 1
            return [self.n], sw.RETAIN

        def snapshot(self) -> int:
            return self.n


    def good(df: DataFrame) -> DataFrame:
        return sw.stateful(df, key="k", builder=Counter, output_schema="n long")


    def bad(df: DataFrame) -> DataFrame:
        return sw.stateful(df, key="k", builder=Counter, output_schema="n long",
                           no_such_option=1)


    def bad_result(df: DataFrame) -> int:
        return stateful_batch(df, key="k", builder=Counter, output_schema="n long")
""")


def test_entry_points_are_visible_to_type_checkers(tmp_path: Path):
    snippet = tmp_path / "user_code.py"
    snippet.write_text(USER_CODE)
    # --no-implicit-reexport (part of --strict): names imported from sparkwax must
    # be exported explicitly (the `x as x` imports and an __all__ mypy can read).
    # Only the snippet's errors count: sparkwax's own modules are checked with
    # the project's settings by test_package_is_clean.
    done = mypy("--no-implicit-reexport", "--cache-dir", ".mypy_cache/user_code", str(snippet))
    output = done.stdout + done.stderr
    # By file name: mypy's cache may replay an identical snippet's errors under
    # the path of an earlier run's tmp_path.
    errors = [line for line in done.stdout.splitlines()
              if Path(line.split(":")[0]).name == snippet.name and ": error:" in line]
    # Only the two deliberate mistakes: if sw.stateful were the module's
    # __getattr__ (Any), mypy would accept both.
    assert len(errors) == 2, output
    assert 'Unexpected keyword argument "no_such_option" for "stateful"' in errors[0], output
    assert "Incompatible return value type" in errors[1], output


def test_entry_points_stay_lazy_at_run_time():
    program = ("import sys, sparkwax; print('stateful' in dir(sparkwax), "
               "any(m.split('.')[0] == 'pyspark' for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr


BUILDERS = textwrap.dedent("""
    from __future__ import annotations

    from datetime import datetime
    from functools import partial
    from typing import Any, Dict, Iterable, List, Optional, Tuple

    import bytewax.operators as bw

    import sparkwax as sw
    from sparkwax.logic import ItemLogic, Logic


    class Count(sw.StatefulLogic):  # bare: StatefulLogic[Any, Any, Any]
        def __init__(self, resume: Optional[int] = None) -> None:
            self.n = resume or 0

        def on_item(self, value: Any) -> Tuple[List[int], bool]:
            self.n += 1
            return [self.n], sw.RETAIN

        def snapshot(self) -> int:
            return self.n


    class Lengths(sw.StatefulLogic[str, int, int]):
        def __init__(self, resume: Optional[int]) -> None:
            self.n = resume or 0

        def on_item(self, value: str) -> Tuple[Iterable[int], bool]:
            return [len(value)], sw.RETAIN

        def snapshot(self) -> int:
            return self.n


    class Sizes(sw.StatefulBatchLogic[str, int, None]):
        def __init__(self, resume: None) -> None:
            pass

        def on_batch(self, values: List[str]) -> Tuple[Iterable[int], bool]:
            return [len(values)], sw.DISCARD

        def snapshot(self) -> None:
            return None


    class Duck:  # no base class: the methods are enough
        def __init__(self, resume: Optional[float]) -> None:
            self.total = resume or 0.0

        def on_item(self, value: float) -> Tuple[List[float], bool]:
            self.total += value
            return [self.total], False

        def on_notify(self) -> Tuple[List[float], bool]:
            return [], False

        def on_eof(self) -> Tuple[List[float], bool]:
            return [self.total], True

        def notify_at(self) -> Optional[datetime]:
            return None

        def snapshot(self) -> float:
            return self.total


    class Ported(bw.StatefulLogic[str, str, int]):  # Bytewax's own base class
        def __init__(self, resume: Optional[int]) -> None:
            self.n = resume or 0

        def on_item(self, value: str) -> Tuple[Iterable[str], bool]:
            return [value], bw.StatefulLogic.RETAIN

        def snapshot(self) -> int:
            return self.n


    class NoSnapshot:
        def __init__(self, resume: None) -> None:
            pass

        def on_item(self, value: Any) -> Tuple[List[int], bool]:
            return [], False


    def from_dict(resume: Optional[Dict[str, int]]) -> Count:
        return Count(None if resume is None else resume["n"])


    def needs_state(resume: int) -> Count:
        return Count(resume)


    def step(builder: sw.Builder) -> None: ...


    def typed_step(builder: sw.Builder[str, int, int]) -> Logic[str, int, int]:
        return builder(None)


    step(Count)
    step(Lengths)
    step(Sizes)
    step(Duck)
    step(Ported)
    step(from_dict)
    step(lambda resume: Count(resume))
    step(partial(Count))
    typed_step(Lengths)
    logic: ItemLogic[str, int, int] = Lengths(None)

    step(NoSnapshot)  # E: arg-type
    step(Count(None))  # E: arg-type
    step(needs_state)  # E: arg-type
    typed_step(Duck)  # E: arg-type
    typed_step(Sizes)  # E: arg-type
""")


def assert_marked_errors(snippet: Path, source: str) -> None:
    """``source`` under ``mypy --strict`` has an error on exactly the lines
    marked ``# E: <code>``, with that code."""
    snippet.write_text(source)
    done = mypy(*STRICT, str(snippet))
    found = {(int(line), code) for name, line, code in
             re.findall(r"^([^:\n]+):(\d+): error: .*\[([a-z-]+)\]$", done.stdout, re.M)
             if Path(name).name == snippet.name}
    expected = {(number, code) for number, text in enumerate(source.splitlines(), 1)
                for code in re.findall(r"# E: ([a-z-]+)", text)}
    assert found == expected, done.stdout + done.stderr


def test_builder_types_under_strict(tmp_path: Path):
    """``builder: Builder`` takes every kind of builder a step runs (a logic
    class of either kind, a Bytewax logic, a plain class with the methods, a
    function) under ``mypy --strict``, and rejects the lines marked ``# E:``."""
    assert_marked_errors(tmp_path / "builders.py", BUILDERS)


USER_PROGRAM = textwrap.dedent("""
    from __future__ import annotations

    from datetime import datetime, timedelta, timezone
    from typing import Any, Dict, Iterable, List, Optional, Tuple

    import sparkwax as sw
    from sparkwax.operators import (OperatorBuilder, TumblingWindower, WindowOut, count_final,
                                    count_window, fold_final, stateful_map)
    from sparkwax.testing import Batch, Eof, RunResult, run, run_bounded


    class Total(sw.StatefulLogic[int, int, int]):
        def __init__(self, resume: Optional[int] = None) -> None:
            self.total = resume or 0

        def on_item(self, value: int) -> Tuple[Iterable[int], bool]:
            self.total += value
            return [self.total], sw.RETAIN

        def notify_at(self) -> Optional[datetime]:
            return None

        def snapshot(self) -> int:
            return self.total


    def empty() -> List[int]:
        return []


    def add(acc: List[int], value: int) -> List[int]:
        return acc + [value]


    def running_count(count: Optional[int], value: str) -> Tuple[Optional[int], int]:
        new = (count or 0) + 1
        return new, new


    collected: OperatorBuilder[int, List[int], Any] = fold_final(empty, add)
    as_builder: sw.Builder[int, List[int], Any] = collected
    counts: sw.Builder[str, int, int] = stateful_map(running_count)
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    windows: sw.Builder[Any, WindowOut, Any] = count_window(
        TumblingWindower(timedelta(minutes=10), align_to=t0))


    def offline() -> Dict[Any, List[Any]]:
        result: RunResult = run(Total, [Batch([("a", 1), ("a", 2), ("b", 5)]), Eof()])
        finals = run_bounded(collected, [("a", 1), ("a", 2)])
        return {**result.by_key, **finals.by_key,
                **run_bounded(count_final(), [("a", 0)]).by_key}


    def on_spark(df: Any) -> Any:
        totals = sw.stateful(df, key="user", builder=Total, output_schema="total long")
        lists = sw.stateful(df, key="user", builder=collected,
                            output_schema="values array<long>",
                            time=sw.EventTime("ts", watermark="10 minutes"))
        return totals.unionByName(lists, allowMissingColumns=True)
""")


def test_user_program_is_strict_clean(tmp_path: Path):
    """A user's program (a StatefulLogic subclass run offline, operators, and
    ``sw.stateful`` on a DataFrame typed Any) passes ``mypy --strict``, imports
    followed: nothing it imports from sparkwax reports an error either."""
    program = tmp_path / "user_program.py"
    program.write_text(USER_PROGRAM)
    done = mypy("--strict", "--cache-dir", ".mypy_cache/user_program", str(program))
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


OPERATOR_MISTAKES = textwrap.dedent("""
    from typing import Any, List, Tuple

    import sparkwax as sw
    from sparkwax.operators import OperatorBuilder, count_final, fold_final, stateful_map


    def empty() -> List[int]:
        return []


    def add(acc: List[int], value: int) -> List[int]:
        return acc + [value]


    def count_up(acc: int, value: int) -> int:
        return acc + 1


    def label(state: Any, value: int) -> Tuple[Any, str]:
        return state, str(value)


    ok: sw.Builder[int, List[int], Any] = fold_final(empty, add)
    labels: sw.Builder[int, str, Any] = stateful_map(label)
    wrong_values: sw.Builder[str, List[int], Any] = fold_final(empty, add)  # E: arg-type
    wrong_emits: OperatorBuilder[int, str, Any] = fold_final(empty, add)  # E: arg-type
    fold_final(empty, count_up)  # E: misc
    counts: sw.Builder[Any, str, Any] = count_final()  # E: assignment
""")


def test_operators_keep_their_types(tmp_path: Path):
    """An operator's builder is an ``OperatorBuilder[V, W, S]`` typed from its
    arguments (not Any): the lines marked ``# E:`` are errors under --strict."""
    assert_marked_errors(tmp_path / "operator_mistakes.py", OPERATOR_MISTAKES)
