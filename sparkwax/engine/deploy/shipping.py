"""Ship the installed ``sparkwax`` package to Spark executors.

Executors unpickle the stateful step's function, which refers to sparkwax's
engine by reference, so ``import sparkwax`` must work in every Python worker.
When sparkwax is not installed on the cluster, the engine zips the package
the driver runs (once per process, deterministic bytes, named by content
hash) and adds it to the job with ``SparkContext.addPyFile`` (once per
SparkContext), or, on a Spark Connect session, with
``SparkSession.addArtifacts(zip, pyfile=True)`` (once per session) and, since
Spark does not hand session artifacts to a streaming query's workers, inside
each step's function (``ship_function``, ``carrier.py``). Spark puts shipped zips ahead of site-packages on the workers,
so executors run exactly the driver's sparkwax even where another version is
installed.

The zip holds the runtime only: the core, ``engine`` and ``operators``, not
the command line (``sparkwax.cli``, with the demo) nor the test tooling
(``sparkwax.testing``). Where executors import sparkwax from the zip, the
classes and functions a step takes from those two packages (the demo's
logics, ``sparkwax.testing.reference`` builders) travel by value, through
PySpark's cloudpickle (``pickle_unshipped_by_value``).

>>> path = build_zip()                                    # doctest: +SKIP
>>> os.path.basename(path)                                # doctest: +SKIP
'sparkwax-0.1.0-3f2a9c1b7d20.zip'
>>> ship_decision("spark://10.0.0.5:7077", None, None)
(True, 'master spark://10.0.0.5:7077 runs executors in their own Python')
>>> ship_decision("local[4]", None, None)[0]
False

The setting: Spark config ``spark.sparkwax.ship`` (wins) or environment
variable ``SPARKWAX_SHIP``; ``auto`` (default: ship unless the master is
``local``/``local[N]``, whose workers use the driver's interpreter),
``true`` (always) or ``false`` (never: sparkwax is installed on the cluster,
or you pass the zip yourself). Over Spark Connect ``auto`` ships: the
server's Python workers are not this interpreter, whatever its master. A zip already in ``--py-files`` (what
``sparkwax submit`` does) is not shipped twice.

The zip's files come from one ``os.walk`` over the package folder
(``package_files``): ``zipfile.PyZipFile.writepy`` would store bytecode
(no sources in tracebacks, bytes that depend on the interpreter, no
``py.typed``), and ``pkgutil``/``importlib.resources`` do not list a
package's files with subpackages left out (docs/deploy.md).

``python -m sparkwax.engine.deploy.shipping`` prints the zip's path, for plain
``spark-submit --py-files``. This module imports pyspark only inside
``ensure_shipped`` and ``pickle_unshipped_by_value``.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import os
import sys
import tempfile
import zipfile
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ...errors import ConfigError
from ..spark_version import classic_context, python_includes
from .app_modules import ship_app_modules
from .driver_workers import share_python_files
from .zips import cache_dir, submitted_py_files, zip_bytes

CONF_KEY = "spark.sparkwax.ship"
ENV_KEY = "SPARKWAX_SHIP"
_ALWAYS = {"true", "always", "force", "yes", "on", "1"}
_NEVER = {"false", "never", "no", "off", "0"}
_AUTO = {"auto", ""}
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")
UNSHIPPED = ("cli", "testing")  # subpackages left out of the zip: executors need neither
_ATTRIBUTE = "_sparkwax_shipped"
_ZIPPED = "_sparkwax_zipped"  # the executors import sparkwax from a zip (shipped or --py-files)

log = logging.getLogger("sparkwax.shipping")
_built: Dict[str, Tuple[Tuple[Any, ...], str]] = {}  # package dir -> (fingerprint, zip path)
_connect_shipped: Dict[object, str] = {}  # Connect session id -> zip path ("" = not shipped)
_zip_bytes: Dict[str, bytes] = {}          # zip path -> its bytes, for carried functions


def package_dir() -> str:
    """The directory of the ``sparkwax`` package this process imported."""
    import sparkwax

    return os.path.dirname(os.path.abspath(sparkwax.__file__))


def package_files(directory: str) -> List[Tuple[str, str]]:
    """``(path on disk, name in the zip)`` for every file of the package's
    runtime, sorted, without the ``UNSHIPPED`` subpackages, bytecode caches
    and hidden files."""
    root = os.path.dirname(directory)
    found = []
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = sorted(d for d in subfolders
                               if d not in _SKIPPED_DIRS and not d.startswith(".")
                               and not (folder == directory and d in UNSHIPPED))
        for name in files:
            if name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            found.append((path, os.path.relpath(path, root).replace(os.sep, "/")))
    return sorted(found, key=lambda item: item[1])


def build_zip(directory: Optional[str] = None, *, target_dir: Optional[str] = None) -> str:
    """Zip the sparkwax package at ``directory`` (default: the imported one)
    and return the zip's path, ``sparkwax-<version>-<hash>.zip``. Rebuilt
    only when a file of the package changed since the last call. If the
    package itself was imported from a zip, that zip is returned."""
    if directory is None:
        archive = _imported_from_zip()
        if archive is not None:
            return archive
        directory = package_dir()
    directory = os.path.abspath(directory)
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        raise ConfigError(f"cannot ship sparkwax: {directory} is not a package directory")
    files = package_files(directory)
    fingerprint = tuple((name, os.stat(path).st_size, os.stat(path).st_mtime_ns)
                        for path, name in files)
    cached = _built.get(directory)
    if cached and cached[0] == fingerprint and os.path.isfile(cached[1]) and target_dir is None:
        return cached[1]
    data = zip_bytes(files)
    name = f"sparkwax-{_version(directory)}-{hashlib.sha256(data).hexdigest()[:12]}.zip"
    path = os.path.join(target_dir or cache_dir(), name)
    if not (os.path.isfile(path) and os.path.getsize(path) == len(data)):
        staging = f"{path}.{os.getpid()}.tmp"
        with open(staging, "wb") as handle:
            handle.write(data)
        os.replace(staging, path)  # atomic: concurrent drivers never see half a zip
    if target_dir is None:
        _built[directory] = (fingerprint, path)
    return path


def parse_setting(value: Optional[str], source: str = CONF_KEY) -> str:
    """``"auto"``, ``"true"`` or ``"false"`` for a user's setting."""
    text = "" if value is None else str(value).strip().lower()
    if text in _AUTO:
        return "auto"
    if text in _ALWAYS:
        return "true"
    if text in _NEVER:
        return "false"
    raise ConfigError(f"{source} must be auto, true or false, got {value!r}")


def is_local_master(master: Optional[str]) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: executors are
    threads of the driver's JVM and run Python workers with the driver's
    interpreter. (``local-cluster[...]`` is not: it starts executor JVMs.)"""
    master = (master or "").strip()
    return master == "local" or master.startswith("local[")


def ship_decision(master: Optional[str], conf_value: Optional[str],
                  env_value: Optional[str], included: Iterable[str] = (), *,
                  connect: bool = False) -> Tuple[bool, str]:
    """Whether to ship, and why (for the log). ``connect``: a Spark Connect
    session, whose server runs Python workers of its own whatever its master.

    >>> ship_decision(None, None, None, connect=True)
    (True, "Spark Connect: the server's Python workers are not this interpreter")
    >>> ship_decision(None, "false", None, connect=True)
    (False, 'spark.sparkwax.ship=false')
    """
    if any(_is_sparkwax_zip(name) for name in included):
        return False, "a sparkwax zip is already in the job's Python files"
    if conf_value is not None and str(conf_value).strip() != "":
        setting, source = parse_setting(conf_value, CONF_KEY), CONF_KEY
    else:
        setting, source = parse_setting(env_value, ENV_KEY), ENV_KEY
    if setting == "false":
        return False, f"{source}=false"
    if setting == "true":
        return True, f"{source}=true"
    if connect:
        return True, "Spark Connect: the server's Python workers are not this interpreter"
    if is_local_master(master):
        return False, f"master {master} runs Python workers with the driver's interpreter"
    return True, f"master {master} runs executors in their own Python"


def ensure_shipped(spark: Any) -> Optional[str]:
    """Make sparkwax importable on ``spark``'s executors; called when a step is
    planned. Returns the shipped zip's path (now or earlier in this
    SparkContext), or None when nothing needs shipping. Where the executors
    import sparkwax from a zip, registers ``UNSHIPPED`` for pickling by
    value (``pickle_unshipped_by_value``), at every call: a step may use a
    package imported since the last one."""
    sc = classic_context(spark)  # None for Spark Connect sessions
    if sc is None:
        path = _ship_to_connect(spark)
        zipped = path is not None
    else:
        path = _ship_to_context(spark, sc)
        zipped = bool(getattr(sc, _ZIPPED, False))
    if zipped:
        pickle_unshipped_by_value()
    return path


def pickle_unshipped_by_value() -> None:
    """Have PySpark's cloudpickle send the classes and functions of
    ``sparkwax.cli`` and ``sparkwax.testing`` by value: they are not in the
    zip, so executors cannot import them. A package not imported yet holds
    nothing a step uses; registering a package covers its submodules, also
    those imported later."""
    from pyspark import cloudpickle

    root = __name__.split(".")[0]
    for name in UNSHIPPED:
        package = sys.modules.get(f"{root}.{name}")
        if package is not None:
            # pyspark's bundled cloudpickle has no annotations (only --strict minds)
            cloudpickle.register_pickle_by_value(  # type: ignore[no-untyped-call, unused-ignore]
                package)


def _ship_to_context(spark: Any, sc: Any) -> Optional[str]:
    """ensure_shipped for a classic session: ``addPyFile``, once per SparkContext."""
    shipped: Optional[str] = getattr(sc, _ATTRIBUTE, None)
    if shipped is not None:
        return shipped or None
    included = python_includes(sc)
    included += [os.path.basename(p) for p in submitted_py_files(sc).split(",") if p]
    ship, reason = ship_decision(sc.master, spark.conf.get(CONF_KEY, None),
                                 os.environ.get(ENV_KEY), included)
    setattr(sc, _ZIPPED, ship or any(_is_sparkwax_zip(name) for name in included))
    if not ship:
        log.info("not shipping sparkwax: %s", reason)
        setattr(sc, _ATTRIBUTE, "")
        return None
    path = build_zip()
    sc.addPyFile(path)
    log.info("shipped sparkwax to executors as %s (%s)", path, reason)
    setattr(sc, _ATTRIBUTE, path)
    return path


def ship_function(spark: Any, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a step's pandas function) as ``spark``'s workers need it:
    sparkwax shipped first (``ensure_shipped``), and over Spark Connect the zip
    carried inside the function (``carrier.carry``: Spark does not put session
    artifacts on the path of a streaming query's workers). On a classic
    session, also the main script's own modules (``app_modules``), and
    all the job's Python files on the path of the Python worker Spark starts
    on the driver for a re-keyed or seeded step (``driver_workers``)."""
    path = ensure_shipped(spark)
    if classic_context(spark) is not None:
        ship_app_modules(spark)  # the main script's own modules, for plain python/spark-submit
        share_python_files(spark)  # before the step's function is created
    if path is None or classic_context(spark) is not None:
        return function
    from .carrier import carry

    if path not in _zip_bytes:
        with open(path, "rb") as handle:
            _zip_bytes[path] = handle.read()
    return carry(function, zip_bytes=_zip_bytes[path], zip_name=os.path.basename(path))


def _ship_to_connect(spark: Any) -> Optional[str]:
    """ensure_shipped for a Spark Connect session: an artifact, once per session."""
    session_id = getattr(spark, "session_id", None) or id(spark)
    if session_id in _connect_shipped:
        return _connect_shipped[session_id] or None
    ship, reason = ship_decision(None, spark.conf.get(CONF_KEY, None),
                                 os.environ.get(ENV_KEY), connect=True)
    if not ship:
        log.info("not shipping sparkwax: %s", reason)
        _connect_shipped[session_id] = ""
        return None
    path = build_zip()
    try:
        spark.addArtifacts(path, pyfile=True)
    except Exception as error:
        if "already exists" not in str(error):  # same zip added by another client object
            raise ConfigError(f"cannot ship sparkwax to the Spark Connect server as an "
                              f"artifact ({error}); install sparkwax on the server's Python "
                              f"or set {CONF_KEY}=false") from error
    log.info("shipped sparkwax to the Spark Connect server as %s (%s)", path, reason)
    _connect_shipped[session_id] = path
    return path


def _is_sparkwax_zip(name: str) -> bool:
    base = os.path.basename(name)
    return base.startswith("sparkwax") and base.endswith(".zip")


def _imported_from_zip() -> Optional[str]:
    """The archive sparkwax was imported from (a shipped zip), if any."""
    import sparkwax

    archive: Optional[str] = getattr(getattr(sparkwax, "__loader__", None), "archive", None)
    if archive and os.path.isfile(archive) and _is_sparkwax_zip(archive):
        return archive
    return None


def _version(directory: str) -> str:
    """The package's ``__version__`` (the one version source: setup.cfg reads
    it too, ``version = attr: sparkwax.__version__``), read from its
    ``__init__.py`` without importing it, as setuptools reads it."""
    with open(os.path.join(directory, "__init__.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    return "0"


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m sparkwax.engine.deploy.shipping [--dir DIR]``: build the zip, print its path."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m sparkwax.engine.deploy.shipping",
        description="Zip the installed sparkwax package for spark-submit --py-files "
                    "and print the zip's path.")
    parser.add_argument("--dir", help="write the zip into this folder "
                                      "(default: a per-user temp folder)")
    args = parser.parse_args(argv)
    print(build_zip(target_dir=args.dir))
    return 0


__all__ = ["CONF_KEY", "ENV_KEY", "UNSHIPPED", "build_zip", "ensure_shipped",
           "is_local_master", "package_files", "parse_setting", "pickle_unshipped_by_value",
           "ship_decision", "ship_function"]


if __name__ == "__main__":
    sys.exit(main())
