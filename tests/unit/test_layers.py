"""The package's layers, read from the source with ``ast`` (every ``import`` and
``from ... import``, relative ones resolved, lazy ones inside functions and
``TYPE_CHECKING`` blocks included), so a new module is checked too.

- core: every module directly under ``sparkwax/`` but ``__init__.py``
  (``logic``, ``timers``...), ``sparkwax/_driver``, ``sparkwax/schema``, ``sparkwax/_ops``
  and ``sparkwax/engine/checkpoints/format`` (a checkpoint's files as data):
  imports only the core, never pyspark, pandas, pyarrow or hypothesis;
- engine (``sparkwax/engine``): the core and itself, never operators,
  testing or cli; inside it, each folder imports only the folders below it in
  ``ENGINE_ORDER`` (so no two folders import each other, through any others);
- operators (``sparkwax/operators``): the core and itself, never engine,
  testing, cli or pyspark;
- testing (``sparkwax/testing``): the core, operators and itself; engine and
  pyspark only in ``testing/spark.py``, the Spark harness; never cli;
- surface: ``sparkwax/frames.py`` (the DataFrame-level operators such as
  ``sw.join``, which need an engine plumbing and an operator): the core, the
  engine and the operators, pyspark only through the engine;
- cli (``sparkwax/cli``): anything;
- ``sparkwax/__init__.py`` (the public surface): the core, and the engine and
  ``frames`` only lazily (inside a function or under ``TYPE_CHECKING``).

``from sparkwax import stateful`` counts as an engine import (the names
``sparkwax.__getattr__`` loads from the engine); ``import sparkwax`` as a core
one (``sw.stateful`` through it is not seen). docs/semantics.md "Architecture"
draws the layers; ``KNOWN`` lists the accepted exceptions, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

import pytest

from kit import PACKAGE

ROOT = PACKAGE.name

SUBPACKAGE_LAYERS = {"engine": "engine", "operators": "operators", "testing": "testing",
                     "cli": "cli", "schema": "core", "_ops": "core", "_driver": "core"}
FOLDER_LAYERS = {("engine", "checkpoints", "format"): "core"}  # what checkpoint files mean, as
#                                                                 data: pure, read by testing too
ROOT_MODULE_LAYERS = {"frames": "surface"}  # the DataFrame-level operators: engine + operators
MAY_IMPORT = {
    "core": {"core"},
    "engine": {"core", "engine"},
    "operators": {"core", "operators"},
    "testing": {"core", "operators", "testing"},
    "cli": {"core", "engine", "operators", "testing", "cli", "surface"},
    "surface": {"core", "engine", "operators", "surface"},
    # engine and surface lazily only: test_the_root_imports_the_engine_lazily
    "root": {"core", "engine", "surface"},
}
NEVER = {  # third-party packages a layer must not import, even lazily
    "core": {"pyspark", "py4j", "pandas", "pyarrow", "hypothesis"},
    "root": {"pyspark", "py4j", "pandas", "pyarrow", "hypothesis"},
    "engine": {"hypothesis"},
    "operators": {"pyspark", "py4j", "hypothesis"},
    "testing": {"pyspark", "py4j"},
    "cli": set(),
    "surface": {"pyspark", "py4j", "hypothesis"},  # pyspark through the engine only
}
EXCEPTIONS = {  # a module allowed more than its layer, for good
    "testing/spark.py": {"engine", "pyspark"},  # the Spark harness: run a script on Spark
    "testing/checkpoint_replay.py": {"engine"},  # replay reads a checkpoint and its sink with Spark
    #                                   (the engine, lazily); the comparison is pure
}
# Violations that exist today, each with who removes it: (importing module,
# imported name or prefix). Delete an entry once its import is gone:
# test_known_violations_still_exist fails on a stale entry.
KNOWN = {
    ("recovery.py", "pyspark"),  # decode/encode on an executor that has PySpark's bundled
    #                              cloudpickle but not the cloudpickle package (lazy, guarded)
}


class Import(NamedTuple):
    module: str     # importing file, relative to sparkwax/ ("engine/planning/plan.py")
    line: int
    target: str     # what it imports, relative to sparkwax/ ("operators.final"),
    #                 "" for the package itself, or a third-party name ("pyspark.sql")
    internal: bool  # a sparkwax module
    lazy: bool      # inside a function or a TYPE_CHECKING block
    names: Tuple[str, ...]  # the names of a ``from ... import``


def layer_of(relative: str) -> str:
    """The layer of a file (``"engine/planning/plan.py"``) or of an imported name
    (``"engine.plan"``, ``""`` for the package itself)."""
    parts = relative.replace("/", ".").split(".")
    if relative in ("", "__init__.py"):
        return "root"
    for folder, layer in FOLDER_LAYERS.items():  # a folder of another layer's package
        if parts[:len(folder)] == list(folder) and len(parts) > len(folder):
            return layer
    if len(parts) > 1 and parts[0] in SUBPACKAGE_LAYERS:
        return SUBPACKAGE_LAYERS[parts[0]]
    if parts[0] in SUBPACKAGE_LAYERS:  # "engine" itself (imported as a package)
        return SUBPACKAGE_LAYERS[parts[0]]
    if parts[0] in ROOT_MODULE_LAYERS:
        return ROOT_MODULE_LAYERS[parts[0]]
    if (PACKAGE / parts[0]).is_dir():
        raise AssertionError(f"sparkwax/{parts[0]}/ has no layer: add it to SUBPACKAGE_LAYERS "
                             "(and to docs/semantics.md \"Architecture\")")
    return "core"


def modules() -> List[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _dotted(path: Path) -> List[str]:
    """``["sparkwax", "engine", "plan"]``; a package's ``__init__`` is the package."""
    parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else \
        test.attr if isinstance(test, ast.Attribute) else ""
    return name.lstrip("_") == "TYPE_CHECKING"


def _walk(node: ast.AST, lazy: bool = False) -> Iterator[Tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield statement, True
                yield from _walk(statement, True)
            for statement in child.orelse:
                yield statement, lazy
                yield from _walk(statement, lazy)
            continue
        yield child, inner
        yield from _walk(child, inner)


def _is_module(dotted: List[str]) -> bool:
    base = PACKAGE.parent.joinpath(*dotted)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, source: Optional[str] = None) -> List[Import]:
    """Every import of the file at ``path`` (or of ``source``, read as if it
    were that file), with relative imports resolved."""
    tree = ast.parse(source if source is not None else path.read_text(), filename=str(path))
    package = _dotted(path) if path.name == "__init__.py" else _dotted(path)[:-1]
    found = []

    def add(node, lazy, dotted: List[str], names=()):
        internal = dotted[:1] == [ROOT]
        target = ".".join(dotted[1:] if internal else dotted)
        found.append(Import(_relative(path), node.lineno, target, internal, lazy, tuple(names)))

    for node, lazy in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(node, lazy, alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                assert base, f"{_relative(path)}:{node.lineno} imports above the package"
                dotted = base + (node.module.split(".") if node.module else [])
            else:
                dotted = node.module.split(".")
            names = [alias.name for alias in node.names]
            submodules = [n for n in names if dotted[:1] == [ROOT] and _is_module(dotted + [n])]
            for name in submodules:  # ``from . import clickstream``: the module itself
                add(node, lazy, dotted + [name])
            rest = [n for n in names if n not in submodules]
            if rest or not submodules:
                add(node, lazy, dotted, rest)
    return found


def _lazy_names(variable: str) -> Set[str]:
    """The names ``sparkwax/__init__.py`` loads lazily (``_ENGINE_NAMES`` from
    the engine, ``_FRAME_NAMES`` from ``frames``)."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == variable for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"sparkwax/__init__.py has no {variable}")


ENGINE_NAMES = _lazy_names("_ENGINE_NAMES")
FRAME_NAMES = _lazy_names("_FRAME_NAMES")


def target_layers(found: Import) -> Dict[str, str]:
    """``{layer or third-party package: the name that put it there}``."""
    if not found.internal:
        return {found.target.split(".")[0]: found.target}
    if found.target == "" and set(found.names) & ENGINE_NAMES:  # from sparkwax import stateful
        return {"engine": ", ".join(sorted(set(found.names) & ENGINE_NAMES))}
    if found.target == "" and set(found.names) & FRAME_NAMES:   # from sparkwax import join
        return {"surface": ", ".join(sorted(set(found.names) & FRAME_NAMES))}
    layer = layer_of(found.target)
    # the package itself imports only the core eagerly (test_the_root_imports_the_engine_lazily)
    return {"core" if layer == "root" else layer: found.target or ROOT}


def _known(module: str, target: str) -> bool:
    return any(module == known_module and (target == name or target.startswith(name + "."))
               for known_module, name in KNOWN)


def violations(path: Path, source: Optional[str] = None, *,
               known: bool = True) -> List[str]:
    """What ``path`` imports against the rules, as ``"file:line imports x (layer)"``."""
    module = _relative(path)
    layer = layer_of(module)
    allowed = MAY_IMPORT[layer] | EXCEPTIONS.get(module, set())
    never = NEVER[layer] - EXCEPTIONS.get(module, set())
    wrong = []
    for found in imports_of(path, source):
        for kind, name in target_layers(found).items():
            bad = (kind in never) if not found.internal else (kind not in allowed)
            if known and _known(module, found.target):
                continue
            if bad:
                wrong.append(f"{module}:{found.line} imports {name} "
                             f"({'third-party' if not found.internal else kind}) "
                             f"from the {layer} layer")
    return wrong


@pytest.mark.parametrize("path", modules(), ids=_relative)
def test_a_module_imports_only_the_layers_below_it(path):
    assert violations(path) == []


def test_the_root_imports_the_engine_lazily():
    eager = [f"__init__.py:{i.line} imports {i.target}"
             for i in imports_of(PACKAGE / "__init__.py")
             if i.internal and layer_of(i.target) in ("engine", "surface") and not i.lazy]
    assert eager == []
    assert "engine" in {layer_of(i.target) for i in imports_of(PACKAGE / "__init__.py")
                        if i.internal}  # the lazy ones are seen


def test_every_module_has_a_layer():
    layers = {_relative(p): layer_of(_relative(p)) for p in modules()}
    assert layers["_driver/routes.py"] == layers["engine/checkpoints/format/paths.py"] == "core"
    assert layers["_driver/__init__.py"] == layers["logic.py"] == "core"
    assert layers["engine/planning/plan.py"] == "engine" and layers["cli/demo/logics.py"] == "cli"
    assert layers["__init__.py"] == "root"
    assert layers["frames.py"] == "surface" and layers["step.py"] == "core"
    assert set(layers.values()) == {"root", "core", "engine", "operators", "testing", "cli",
                                    "surface"}


def test_known_violations_still_exist():
    """A stale entry would let the import come back unnoticed: delete it."""
    for module, target in sorted(KNOWN):
        path = PACKAGE / module
        still = path.is_file() and [v for v in violations(path, known=False)
                                    if f" imports {target}" in v]
        assert still, f"KNOWN entry ({module!r}, {target!r}) is no longer a violation: delete it"


# The checker itself, on made-up sources read as if they were package files.

@pytest.mark.parametrize("module, source, expected", [
    ("logic.py", "from .engine.plan import stateful\n", "imports engine.plan (engine)"),
    ("timers.py", "def f():\n    import pyspark.sql\n", "imports pyspark.sql (third-party)"),
    ("clock.py", "import pandas as pd\n", "imports pandas (third-party)"),
    ("engine/planning/plan.py", "from ...operators import basic\n", "imports operators.basic (operators)"),
    ("engine/hosts/host.py", "from ...testing.runner import run\n", "imports testing.runner"),
    ("engine/hosts/host.py", "from ...cli import main\n", "imports cli (cli)"),
    ("operators/basic.py", "from ..engine import stateful\n", "imports engine (engine)"),
    ("operators/basic.py", "from .. import stateful\n", "imports stateful (engine)"),
    ("operators/basic.py", "from sparkwax import stateful_batch\n", "(engine)"),
    ("operators/basic.py", "from pyspark.sql import functions as F\n", "imports pyspark.sql"),
    ("operators/recipes.py", "from ..testing import run\n", "imports testing (testing)"),
    ("testing/runner.py", "from ..engine.plan import stateful\n", "(engine)"),
    ("testing/runner.py", "from ..cli.demo import clickstream\n", "(cli)"),
    ("testing/runner.py", "from pyspark.sql import Row\n", "(third-party)"),
    ("__init__.py", "from .engine import stateful\n", None),  # eager: the root test
    ("__init__.py", "from .cli import main\n", "imports cli (cli)"),
    ("__init__.py", "import pyspark\n", "(third-party)"),
    ("engine/planning/plan.py", "from ...frames import join\n", "imports frames (surface)"),
    ("operators/basic.py", "from .. import join\n", "imports join (surface)"),
    ("frames.py", "from .testing import run\n", "imports testing (testing)"),
    ("frames.py", "from pyspark.sql import functions\n", "(third-party)"),
])
def test_the_checker_finds_a_violation(module, source, expected):
    found = violations(PACKAGE / module, source)
    if expected is None:
        assert found == [] and [i.lazy for i in imports_of(PACKAGE / module, source)] == [False]
    else:
        assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize("module, source", [
    ("logic.py", "from .errors import LogicError\nimport datetime, cloudpickle\n"),
    ("engine/planning/plan.py", "from ...timers import EventTime\nfrom . import schemas\nimport pyspark\n"),
    ("operators/basic.py", "from ._base import Base\nfrom ..logic import RETAIN\n"),
    ("testing/runner.py", "from ..operators.final import count_final\nimport hypothesis\n"),
    ("frames.py", "from .engine.connecting import connect\nfrom .operators.joins import j\n"),
    ("testing/spark.py", "from ..engine.plan import stateful\nfrom pyspark.sql import Row\n"),
    ("cli/demo/app.py", "from ...engine.progress import Follower\nfrom ... import testing\n"),
    ("__init__.py", "if TYPE_CHECKING:\n    from .engine import stateful\n"
                    "def f():\n    from . import engine\n"),
])
def test_the_checker_accepts_what_the_rules_allow(module, source):
    assert violations(PACKAGE / module, source) == []


def test_relative_imports_resolve_from_the_importing_package():
    found = imports_of(PACKAGE / "cli/demo/app.py",
                       "from . import clickstream\nfrom ...engine.progress import Follower\n"
                       "from ..state import x\nfrom .. import __version__\n")
    assert [i.target for i in found] == ["cli.demo.clickstream", "engine.progress", "cli.state",
                                        "cli"]
    found = imports_of(PACKAGE / "engine/__init__.py", "from .plan import stateful\n")
    assert [i.target for i in found] == ["engine.plan"]


# Import cycles. Two graphs over sparkwax's modules: the module-level imports
# (what runs when a module is imported), and those plus the imports inside
# functions and ``TYPE_CHECKING`` blocks. Neither may hold a cycle. In the
# second graph only, a module's import of its own ancestor package is not an
# edge: Python initialises a package before any of its modules, so such an
# import (``import sparkwax`` in engine/deploy/shipping.py to find the package's
# folder, ``sparkwax.__getattr__`` loading the engine lazily) reads a finished
# package; at module level it would still be a cycle, and is checked there.

def module_name(relative: str) -> str:
    """``"engine/planning/plan.py"`` -> ``"engine.plan"``; a package's ``__init__`` is the
    package (``""`` for sparkwax itself)."""
    dotted = relative[:-len(".py")].replace("/", ".")
    return "" if dotted == "__init__" else dotted.removesuffix(".__init__")


def import_graph(function_level: bool,
                 sources: Optional[Dict[str, str]] = None) -> Dict[str, Set[str]]:
    """``{module: the sparkwax modules it imports}``; ``sources`` replaces
    some files' text (``{"engine/planning/plan.py": "..."}``), for the checker's tests."""
    sources = sources or {}
    names = {module_name(_relative(p)) for p in modules()}
    graph: Dict[str, Set[str]] = {}
    for path in modules():
        module = module_name(_relative(path))
        edges = graph.setdefault(module, set())
        for found in imports_of(path, sources.get(_relative(path))):
            if not found.internal or (found.lazy and not function_level):
                continue
            target = found.target
            while target not in names:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            ancestor = target == "" or module.startswith(target + ".")
            if function_level and ancestor and target != module:
                continue
            edges.add(target)
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Every cycle's modules (the strongly connected components of more than
    one module, or of one that imports itself), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


@pytest.mark.parametrize("function_level", [False, True], ids=["module_level", "function_level"])
def test_no_import_cycle(function_level):
    assert cycles(import_graph(function_level)) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    # engine: plan -> host; a host importing plan inside a function closes it
    lazy = {"engine/hosts/host.py": (PACKAGE / "engine/hosts/host.py").read_text()
            + "\n\ndef f():\n    from ..planning.plan import plan_step\n"}
    assert cycles(import_graph(False, lazy)) == []
    pair = ("engine.hosts.host", "engine.planning.plan")
    assert sorted(pair) in [[m for m in c if m in pair] for c in cycles(import_graph(True, lazy))]
    eager = {"engine/deploy/zips.py": "from .shipping import build_zip\n"}  # shipping -> zips
    assert cycles(import_graph(False, eager)) == [
        ["engine.deploy.app_modules", "engine.deploy.shipping", "engine.deploy.zips"]]


def test_an_import_of_its_own_package_is_a_cycle_at_module_level_only():
    # operators/__init__ imports collecting at module level (engine/__init__ is lazy)
    sources = {"operators/collecting.py": "from . import fold_final\n"}
    assert any("operators" in c and "operators.collecting" in c
               for c in cycles(import_graph(False, sources)))
    lazy = {"operators/collecting.py": "def f():\n    from . import fold_final\n"
                                       "    import sparkwax\n"}
    assert cycles(import_graph(True, lazy)) == []


# The engine's folders in order, top first: a module may import its own
# folder and the folders below its own, never one above (imports inside
# functions and under ``TYPE_CHECKING`` included), so no two folders import
# each other, through any number of others. ``engine/__init__.py`` (the index
# of the Spark entry points) stands above them all.
ENGINE_ORDER = [
    "session",             # the local session a program starts with; a quiet end stops queries
    "queries",             # start and the Query, progress, stops
    "checkpoints",         # tools on a checkpoint (finish, read_state, rescale, replay, check)
    "planning",            # a step onto a DataFrame
    "deploy",              # shipping to the executors; what a plan reads of the session
    "hosts",               # what Spark runs per group
    "spark_version",       # what the running Spark line can do
    "checkpoints/format",  # what a checkpoint's files mean, as data (pure)
]


def engine_folder(relative: str) -> Optional[str]:
    """``"engine/planning/plan.py"`` or ``"engine.planning.plan"`` -> ``"planning"``;
    ``None`` for ``engine/__init__.py`` and outside the engine."""
    parts = relative.removesuffix(".py").replace("/", ".").split(".")
    if parts[0] != "engine" or parts[1:] in ([], ["__init__"]):
        return None
    if parts[1:3] == ["checkpoints", "format"]:
        return "checkpoints/format"
    return parts[1]


def order_violations(path: Path, source: Optional[str] = None) -> List[str]:
    """Where an engine module imports an engine folder above its own."""
    module = _relative(path)
    mine = engine_folder(module)
    if mine is None:
        return []
    wrong = []
    for found in imports_of(path, source):
        theirs = engine_folder(found.target) if found.internal else None
        if theirs is not None and ENGINE_ORDER.index(theirs) < ENGINE_ORDER.index(mine):
            wrong.append(f"{module}:{found.line} imports {found.target} ({theirs}/ stands "
                         f"above {mine}/)")
    return wrong


def test_every_engine_folder_has_its_place():
    folders = {engine_folder(_relative(p)) for p in modules()} - {None}
    assert folders == set(ENGINE_ORDER), "add the new folder to ENGINE_ORDER (and to " \
        "docs/semantics.md \"Architecture\")"


@pytest.mark.parametrize("path", [p for p in modules() if engine_folder(_relative(p))],
                         ids=_relative)
def test_an_engine_folder_imports_only_the_folders_below_it(path):
    assert order_violations(path) == []


@pytest.mark.parametrize("module, source", [
    # the ring the order broke: planning -> queries -> checkpoints -> planning
    ("engine/planning/plan.py", "from ..queries.start import step_descriptions\n"),
    ("engine/checkpoints/state/restore_check.py",
     "def f():\n    from ...queries.start import start\n"),
    ("engine/planning/schemas.py", "from ..checkpoints.storage import storage_for\n"),
    ("engine/deploy/session_confs.py", "from ..session.ending import stop_at_exit\n"),
    ("engine/hosts/host.py", "if TYPE_CHECKING:\n    from ..planning.plan import Host\n"),
    ("engine/checkpoints/format/files.py", "from ...spark_version import from_ddl\n"),
])
def test_the_order_check_finds_an_import_upwards(module, source):
    found = order_violations(PACKAGE / module, source)
    assert len(found) == 1 and "stands above" in found[0], found


def test_a_planted_folder_ring_fails_the_order():
    """Two folders that import each other: one of the two imports goes up."""
    down = order_violations(PACKAGE / "engine/queries/start.py",
                            "from ..checkpoints.diagnose import read_steps\n")
    up = order_violations(PACKAGE / "engine/checkpoints/diagnose.py",
                          "from ..queries.start import start\n")
    assert down == [] and len(up) == 1


def test_the_order_accepts_imports_downwards():
    assert order_violations(PACKAGE / "engine/session/ending.py",
                            "from ..queries.stopping import stop_quietly\n"
                            "from ..checkpoints.format.paths import join_path\n"
                            "from ..spark_version import running_batch_id\n"
                            "from .interrupts import quiet_interrupts\n") == []
