"""Find an app's own modules (what it imports from its folder or project) and zip them.

Executors import a logic class from a module of your own by reference, so
the module must reach them. ``find_app_modules(app)`` reads the app's
imports with ``ast`` (no code runs), transitively through every module it
finds locally: a name is **local** when it resolves to a file under the
app's folder or its project root (the nearest parent with
``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``; also its
``src/``), **elsewhere** when it is the standard library, sparkwax, or
importable in this interpreter (site-packages), and **unresolved**
otherwise. An import inside ``try: ... except ImportError`` or under
``if TYPE_CHECKING:`` is optional and never unresolved.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "app.py").write_text("import json\\nimport fraud.rules\\n")
>>> (folder / "fraud").mkdir()
>>> _ = (folder / "fraud" / "__init__.py").write_text("from .rules import Rule\\n")
>>> _ = (folder / "fraud" / "rules.py").write_text("import os\\nclass Rule: pass\\n")
>>> found = find_app_modules(str(folder / "app.py"))
>>> found.modules, [name for _, name in found.files], found.unresolved
(['fraud', 'fraud.rules'], ['fraud/__init__.py', 'fraud/rules.py'], [])
>>> found.summary()
'sparkwax: shipping app modules fraud, fraud.rules (2 files, 1 KB)'
>>> _ = (folder / "fraud" / "rules.py").write_text("import no_such_thing\\n")
>>> find_app_modules(str(folder / "app.py")).unresolved[0].describe(str(folder))
"cannot resolve import 'no_such_thing' (fraud/rules.py:1): not in the app's folder or project, not installed"

``build_app_zip(found)`` writes the files into a deterministic zip named
``app-modules-<hash>.zip`` (next to sparkwax's own zip); ``sparkwax
submit`` passes it with ``--py-files``, and the engine adds it with
``addPyFile`` for an app run with plain ``python`` or ``spark-submit``
(``ship_app_modules``). No pyspark import here but in ``ship_app_modules``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import logging
import os
import sys
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

from ..spark_version import classic_context, python_includes
from .zips import cache_dir, submitted_py_files, zip_bytes

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
ZIP_PREFIX = "app-modules-"
CONF_KEY = "spark.sparkwax.shipApp"
ENV_KEY = "SPARKWAX_SHIP_APP"
_OPTIONAL = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_NOT_SHIPPED = {"sparkwax", "__main__", "pyspark", "py4j"}
log = logging.getLogger("sparkwax.shipping")


class Unresolved(NamedTuple):
    """An import found nowhere: the module, the importing file and line."""

    module: str
    path: str
    line: int

    def describe(self, root: Optional[str] = None) -> str:
        shown = os.path.relpath(self.path, root) if root else self.path
        return (f"cannot resolve import {self.module!r} ({shown}:{self.line}): not in the "
                f"app's folder or project, not installed")


class AppModules(NamedTuple):
    """What ``find_app_modules`` found: module names, ``(path, name in zip)``
    files, the unresolved imports and the folders searched."""

    modules: List[str]
    files: List[Tuple[str, str]]
    unresolved: List[Unresolved]
    roots: List[str]

    def size(self) -> int:
        return sum(os.path.getsize(path) for path, _ in self.files)

    def summary(self) -> str:
        """The one line ``sparkwax submit`` prints."""
        count = len(self.files)
        return (f"sparkwax: shipping app modules {', '.join(self.modules)} "
                f"({count} file{'s' if count != 1 else ''}, {_kilobytes(self.size())})")


def project_root(folder: str) -> Optional[str]:
    """The nearest folder at or above ``folder`` holding a project marker."""
    current = os.path.abspath(folder)
    while True:
        if any(os.path.exists(os.path.join(current, m)) for m in PROJECT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def search_roots(app: str) -> List[str]:
    """The app's folder, then its project root and the root's ``src/``."""
    folder = os.path.dirname(os.path.abspath(app))
    roots = [folder]
    root = project_root(folder)
    if root is not None:
        roots += [root, os.path.join(root, "src")]
    return [r for r in dict.fromkeys(roots) if os.path.isdir(r)]


def find_app_modules(app: str, extra: Iterable[str] = ()) -> AppModules:
    """The local modules ``app`` imports, transitively (``extra``: module
    names to add, e.g. those the driver has imported from the roots)."""
    roots = search_roots(app)
    finder = _Finder(roots)
    finder.scan(os.path.abspath(app), None)
    for name in extra:
        finder.add(name)
    modules = sorted(finder.found)
    files: Dict[str, str] = {}
    for name in modules:
        path, root = finder.found[name]
        files[path] = os.path.relpath(path, root).replace(os.sep, "/")
    return AppModules(modules, sorted(files.items(), key=lambda item: item[1]),
                      finder.unresolved, roots)


def build_app_zip(found: AppModules, target_dir: Optional[str] = None) -> str:
    """Zip ``found.files`` (deterministic bytes); return the zip's path."""
    data = zip_bytes(found.files)
    path = os.path.join(target_dir or cache_dir(),
                        f"{ZIP_PREFIX}{hashlib.sha256(data).hexdigest()[:12]}.zip")
    if not (os.path.isfile(path) and os.path.getsize(path) == len(data)):
        staging = f"{path}.{os.getpid()}.tmp"
        with open(staging, "wb") as handle:
            handle.write(data)
        os.replace(staging, path)
    return path


def is_app_zip(name: str) -> bool:
    base = os.path.basename(name)
    return base.startswith(ZIP_PREFIX) and base.endswith(".zip")


def ship_app_modules(spark: Any) -> Optional[str]:
    """For an app run with plain ``python`` or ``spark-submit``: add the
    modules the main script imports from its folder or project (and those of
    them the driver has imported) to ``spark``'s job with ``addPyFile``, once
    per SparkContext. Nothing for a session without a main script (a
    notebook, pytest's own runner), for a Spark Connect session, when an app
    zip is already in ``--py-files`` (``sparkwax submit``), or when
    ``spark.sparkwax.shipApp`` / ``$SPARKWAX_SHIP_APP`` is ``false``.
    Unresolved imports are logged, not raised: the driver ran them already."""
    sc = classic_context(spark)
    if sc is None or getattr(sc, "_sparkwax_app_shipped", None) is not None:
        return getattr(sc, "_sparkwax_app_shipped", None) or None
    setattr(sc, "_sparkwax_app_shipped", "")
    setting = str(spark.conf.get(CONF_KEY, None) or os.environ.get(ENV_KEY) or "auto")
    included = submitted_py_files(sc).split(",")
    included += python_includes(sc)
    app = getattr(sys.modules.get("__main__"), "__file__", None)
    if setting.strip().lower() in ("false", "no", "off", "0") or not app \
            or any(is_app_zip(name) for name in included):
        return None
    app = os.path.abspath(app)
    if _is_installed(app):  # pytest, ipykernel...: a tool's script, not an app
        return None
    found = find_app_modules(app, extra=_imported_from(search_roots(app), app))
    for problem in found.unresolved:
        log.warning("sparkwax: %s", problem.describe())
    if not found.files:
        return None
    path = build_app_zip(found)
    sc.addPyFile(path)
    log.info("%s as %s", found.summary(), path)
    setattr(sc, "_sparkwax_app_shipped", path)
    return path


def _imported_from(roots: List[str], app: str) -> List[str]:
    """Modules the driver imported from files under ``roots`` (found however
    they were imported: ``importlib``, plugins), not sparkwax's own."""
    names = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or name.split(".")[0] in _NOT_SHIPPED or os.path.abspath(path) == app:
            continue
        path = os.path.abspath(path)
        if any(path.startswith(root + os.sep) for root in roots) and not _is_installed(path):
            names.append(name)
    return names


def _is_installed(path: str) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.split(os.sep))


class _Finder:
    def __init__(self, roots: List[str]):
        self.roots = roots
        self.found: Dict[str, Tuple[str, str]] = {}  # module -> (file, root)
        self.unresolved: List[Unresolved] = []
        self._elsewhere: Dict[str, bool] = {}
        self._scanned: Set[str] = set()

    def scan(self, path: str, package: Optional[str]) -> None:
        """Read ``path``'s imports (``package``: its package, for relative ones)."""
        if path in self._scanned:
            return
        self._scanned.add(path)
        try:
            with open(path, "rb") as handle:
                tree = ast.parse(handle.read(), filename=path)
        except (OSError, SyntaxError, ValueError):
            return  # the driver's own import reports it
        for node, optional in _imports(tree):
            for name, required in _imported_names(node, package):
                if not self.add(name) and required and not optional:
                    self.unresolved.append(Unresolved(name, path, node.lineno))

    def add(self, name: str) -> bool:
        """Record ``name`` (and its parents) if local; False if unresolved."""
        top = name.split(".")[0]
        if top in _NOT_SHIPPED or top in sys.builtin_module_names \
                or top in getattr(sys, "stdlib_module_names", ()):
            return True
        parts = name.split(".")
        for root in self.roots:
            if _local_file(root, parts[:1]) is None:
                continue
            for depth in range(1, len(parts) + 1):
                module = ".".join(parts[:depth])
                path = _local_file(root, parts[:depth])
                if path is None:  # `from pkg import name`: an attribute, not a submodule
                    break
                if module not in self.found:
                    self.found[module] = (path, root)
                    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
                    self.scan(path, package or None)
            return True
        if top not in self._elsewhere:
            try:
                self._elsewhere[top] = importlib.util.find_spec(top) is not None
            except (ImportError, ValueError):
                self._elsewhere[top] = False
        return self._elsewhere[top]


def _local_file(root: str, parts: List[str]) -> Optional[str]:
    """``root/a/b.py`` or ``root/a/b/__init__.py`` for ``["a", "b"]``."""
    base = os.path.join(root, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


_Found = Iterator[Tuple[Union[ast.Import, ast.ImportFrom], bool]]


def _imports(tree: ast.AST) -> _Found:
    """``(import node, optional)`` for every import in ``tree``."""
    def walk(node: ast.AST, optional: bool) -> _Found:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, optional
            return
        if isinstance(node, ast.Try):
            guarded = optional or any(_catches_import_error(h) for h in node.handlers)
            for statement in node.body:
                yield from walk(statement, guarded)
            rest: List[ast.AST] = [*node.handlers, *node.orelse, *node.finalbody]
            for other in rest:
                yield from walk(other, optional)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                yield from walk(statement, True)
            for statement in node.orelse:
                yield from walk(statement, optional)
            return
        for child in ast.iter_child_nodes(node):
            yield from walk(child, optional)

    yield from walk(tree, False)


def _imported_names(node: Any, package: Optional[str]) -> List[Tuple[str, bool]]:
    """``(module, must resolve)``: ``from m import x`` may name a submodule
    ``m.x`` or an attribute of ``m``; only ``m`` must resolve."""
    if isinstance(node, ast.Import):
        return [(alias.name, True) for alias in node.names]
    if node.level:
        if package is None:
            return []  # a relative import in a script: nothing to resolve statically
        parts = package.split(".")
        if node.level - 1 > len(parts) - 1:
            return []
        base = ".".join(parts[:len(parts) - (node.level - 1)])
    else:
        base = ""
    module = ".".join(p for p in (base, node.module or "") if p)
    if not module:
        return []
    return [(module, True)] + [(f"{module}.{alias.name}", False) for alias in node.names
                               if alias.name != "*"]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, (ast.Name, ast.Attribute))
               and (t.id if isinstance(t, ast.Name) else t.attr) in _OPTIONAL for t in types)


def _is_type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _kilobytes(size: int) -> str:
    return f"{max(1, round(size / 1024))} KB"




def ship_app_file(spark: Any, location: str, module: Any = None) -> Optional[str]:
    """For a logic the driver loaded from ``path/app.py`` (``sparkwax state
    check``): the app's ``module`` travels by value (PySpark's cloudpickle),
    and the local modules it imports are zipped and added to ``spark``'s job
    (``addPyFile``; over Spark Connect, an artifact). A ``package.module``
    location ships nothing: it imports where it is installed."""
    if not (location.endswith(".py") or "/" in location):
        return None
    from pyspark import cloudpickle

    if module is not None:
        # pyspark's bundled cloudpickle has no annotations
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call, unused-ignore]
    found = find_app_modules(location)
    for problem in found.unresolved:
        log.warning("sparkwax: %s", problem.describe())
    if not found.files:
        return None
    path = build_app_zip(found)
    sc = classic_context(spark)
    if sc is not None:
        sc.addPyFile(path)
    else:
        spark.addArtifacts(path, pyfile=True)
    log.info("%s as %s", found.summary(), path)
    return path


__all__ = ["AppModules", "Unresolved", "build_app_zip", "find_app_modules", "is_app_zip",
           "project_root", "search_roots", "ship_app_file", "ship_app_modules"]
