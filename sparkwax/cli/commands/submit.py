"""``sparkwax submit``: run a sparkwax app with the pip package's ``spark-submit``.

A thin wrapper: it finds ``bin/spark-submit`` inside the installed pyspark
package, sets ``SPARK_HOME`` to that package, ``PYSPARK_DRIVER_PYTHON`` and
``PYSPARK_PYTHON`` to this interpreter (``--python`` changes the executors'
one), adds the sparkwax zip to ``--py-files`` when the master is not local,
ships the app's own modules (``sparkwax.engine.deploy.app_modules``), starts
Spark's logs at WARN (``sparkwax.engine.session.log_levels``), prints the exact command
(to stderr) and runs it, and prints a failed app's short block last
(``sparkwax._ops.failure``). Its exit code is spark-submit's. Ctrl-C and SIGTERM
stop the app between micro-batches (``run_stoppable``).

    sparkwax submit APP.py [--master URL] [--checkpoint DIR] [APP ARGS...] [-- SPARK-SUBMIT ARGS...]

Everything after ``--`` goes to spark-submit, in front of the app (for example
``-- --conf spark.sql.shuffle.partitions=4 --py-files mylogic.py``; a
``--py-files`` there is merged with the sparkwax zip). Every other argument
after APP.py that is not one of sparkwax submit's own options goes to the
app. ``--checkpoint DIR`` is passed to the app as ``--checkpoint DIR``: the
convention is that sparkwax apps take their checkpoint location that way.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ...errors import SparkwaxError
from ..._ops.failure import FILE_ENV, VERBOSE_ENV

if TYPE_CHECKING:
    from .. import Handler

USAGE = ("sparkwax submit APP.py [--master URL] [--checkpoint DIR] [--once] [APP ARGS...] "
         "[-- SPARK-SUBMIT ARGS...]")

EPILOG = """\
examples:
  sparkwax submit examples/cluster_app.py --input in/ --output out/ --checkpoint ck/
      runs on local[*] (spark-submit's default master); nothing is shipped
  sparkwax submit examples/cluster_app.py --master spark://127.0.0.1:7077 \\
      --input /data/in --output /data/out --checkpoint /data/ck \\
      -- --conf spark.sql.shuffle.partitions=4 --executor-memory 1g
      runs on a standalone cluster; the sparkwax zip goes to --py-files
  sparkwax submit app.py --once --checkpoint ck/
      runs the app's queries as availableNow: the input present, then stop
  sparkwax submit app.py --dry-run -- --py-files mylogic.py
      prints the command without running it

The command is printed to stderr before it runs. Configs given after `--`
(--conf spark.pyspark.python=..., --conf spark.sparkwax.ship=...) win over
what sparkwax submit sets through the environment. See docs/deploy.md.
"""


def submit_command(parser: argparse.ArgumentParser) -> Handler:
    """Run a sparkwax app with the pip package's spark-submit.

    Sets SPARK_HOME to the pyspark package, PYSPARK_DRIVER_PYTHON and
    PYSPARK_PYTHON to this interpreter (--python changes the executors' one),
    adds the sparkwax zip to --py-files unless the master is local, and the
    app's own modules (those it imports from its folder or project; an
    import found nowhere is an error before spark-submit starts), starts
    Spark's logs at WARN (--spark-log-level INFO for all), prints the exact
    spark-submit command to stderr and runs it; the exit code is
    spark-submit's. A failed app ends with one short block (the sparkwax
    error, where it ran, what to do; --verbose for the full trace). Ctrl-C
    or SIGTERM asks the app to stop after the current micro-batch (a second
    one stops it at once). Arguments after APP.py that are not submit's own
    options go to the app; --checkpoint DIR goes to the app as --checkpoint DIR (the
    convention for sparkwax apps); everything after -- goes to spark-submit
    (a --py-files there is merged with the sparkwax zip).
    """
    configure(parser)
    return run


def configure(parser: argparse.ArgumentParser) -> None:
    """Add submit's arguments, usage and examples to ``parser``."""
    parser.usage = USAGE
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("app", metavar="APP.py", help="the application script")
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="...",
                        help="app arguments, then -- and spark-submit arguments")
    _own_options(parser)


def _own_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (spark-submit's default: local[*])")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="checkpoint location, passed to the app as --checkpoint DIR")
    parser.add_argument("--python", metavar="PATH",
                        help="Python interpreter of the executors (default: this one, "
                             f"{sys.executable}); it must exist on every worker")
    parser.add_argument("--ship", choices=["auto", "true", "false"], default=None,
                        help="ship the sparkwax zip: auto (default: unless the master is "
                             "local), true, or false (sparkwax is installed on the cluster)")
    parser.add_argument("--no-ship-app", action="store_true", default=None,
                        help="do not look for the app's own modules nor ship them (they "
                             "are installed on the cluster)")
    parser.add_argument("--spark-log-level", metavar="LEVEL", default=None,
                        help="Spark's log level from the driver's start (default WARN; "
                             "INFO for all of Spark's lines)")
    parser.add_argument("--verbose", action="store_true", default=None,
                        help="on failure, print the full Python and Spark trace before "
                             "sparkwax's short block (also SPARKWAX_VERBOSE=1)")
    parser.add_argument("--once", action="store_true", default=None,
                        help="run every query the app starts with sw.start as availableNow: "
                             "the input present at its start, the timers it made due, then "
                             "stop (spark.sparkwax.once=true)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command and exit without running it")


def _own_parser() -> argparse.ArgumentParser:
    """Parses submit's options when they come after APP.py."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    _own_options(parser)
    return parser


def split_rest(rest: Sequence[str]) -> Tuple[argparse.Namespace, List[str], List[str]]:
    """``(own options, app args, spark-submit args)`` from what follows APP.py."""
    rest = list(rest)
    if "--" in rest:
        cut = rest.index("--")
        before, spark_args = rest[:cut], rest[cut + 1:]
    else:
        before, spark_args = rest, []
    own, app_args = _own_parser().parse_known_args(before)
    return own, app_args, spark_args


def spark_home() -> str:
    """The pip package's Spark home: the ``pyspark`` package directory."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise SystemExit("sparkwax submit needs pyspark: pip install 'sparkwax[spark]'")
    return os.path.dirname(spec.origin)


def spark_submit_path(home: Optional[str] = None) -> str:
    path = os.path.join(home or spark_home(), "bin", "spark-submit")
    if not os.path.isfile(path):
        raise SystemExit(f"sparkwax submit: no spark-submit at {path}")
    return path


def _option_value(args: List[str], name: str) -> Tuple[Optional[str], List[str]]:
    """Remove ``name VALUE`` / ``name=VALUE`` from ``args``; return the last value."""
    value, kept, skip = None, [], False
    for index, token in enumerate(args):
        if skip:
            skip = False
            continue
        if token == name and index + 1 < len(args):
            value, skip = args[index + 1], True
        elif token.startswith(name + "="):
            value = token[len(name) + 1:]
        else:
            kept.append(token)
    return value, kept


def _has_option(args: List[str], name: str) -> bool:
    return any(t == name or t.startswith(name + "=") for t in args)


def _conf_value(args: List[str], key: str) -> Optional[str]:
    """The value of ``--conf key=...`` in spark-submit arguments, if any."""
    value = None
    for index, token in enumerate(args):
        item = None
        if token in ("--conf", "-c") and index + 1 < len(args):
            item = args[index + 1]
        elif token.startswith("--conf="):
            item = token[len("--conf="):]
        if item is not None and item.split("=", 1)[0] == key and "=" in item:
            value = item.split("=", 1)[1]
    return value


def build_command(app: str, *, master: Optional[str] = None, checkpoint: Optional[str] = None,
                  python: Optional[str] = None, ship: Optional[str] = None,
                  app_args: Sequence[str] = (), spark_args: Sequence[str] = (),
                  home: Optional[str] = None, app_zip: Optional[str] = None,
                  log_level: Optional[str] = None, verbose: bool = False,
                  ship_app: bool = True) -> Tuple[List[str], Dict[str, str]]:
    """The spark-submit command and the environment variables it sets
    (``app_zip``: the app's own modules, after the sparkwax zip in
    ``--py-files``; ``log_level``: Spark's, default WARN)."""
    from ...engine.deploy import shipping
    from ...engine.session import log_levels as logs

    home = home or spark_home()
    spark_args = list(spark_args)
    py_files, spark_args = _option_value(spark_args, "--py-files")
    master_shown: Optional[str]
    if master is None and not _has_option(spark_args, "--master"):
        master_shown = "local[*]"  # spark-submit's default
    else:
        master_shown = master or _option_value(spark_args, "--master")[0]
    setting = shipping.parse_setting(
        ship if ship is not None else _conf_value(spark_args, shipping.CONF_KEY),
        "--ship" if ship is not None else shipping.CONF_KEY)
    do_ship = setting == "true" or (setting == "auto"
                                    and not shipping.is_local_master(master_shown))
    files = [f for f in (py_files or "").split(",") if f]
    if app_zip is not None:
        files.insert(0, app_zip)
    if do_ship:
        files.insert(0, shipping.build_zip())
    command = [spark_submit_path(home)]
    if master is not None:
        command += ["--master", master]
    if files:
        command += ["--py-files", ",".join(files)]
    if ship is not None:
        command += ["--conf", f"{shipping.CONF_KEY}={ship}"]
    if not ship_app:  # nor the engine, for the app's own modules
        from ...engine.deploy.app_modules import CONF_KEY as SHIP_APP

        command += ["--conf", f"{SHIP_APP}=false"]
    level = logs.spark_log_level(log_level)
    command += ["--conf", f"{logs.CONF_KEY}={logs.java_option(level, verbose)}"]
    command += spark_args
    command.append(app)
    command += list(app_args)
    if checkpoint is not None:
        command += ["--checkpoint", checkpoint]
    env = {
        "SPARK_HOME": home,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYSPARK_PYTHON": python or sys.executable,
        logs.ENV_KEY: level,
    }
    return command, env


def format_command(command: Sequence[str], env: Dict[str, str]) -> str:
    """A copy-pasteable shell line."""
    assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    return f"{assignments} {shlex.join(command)}"


def run(args: argparse.Namespace) -> int:
    """Handler of ``sparkwax submit``; returns spark-submit's exit code."""
    own, app_args, spark_args = split_rest(getattr(args, "rest", []) or [])

    def pick(name: str) -> Any:  # an option given after APP.py wins over one given before it
        value = getattr(own, name)
        return value if value is not None else getattr(args, name, None)

    if "://" not in args.app and not os.path.isfile(args.app):  # local:// hdfs:// s3a:// ...
        print(f"sparkwax submit: no such app file: {args.app}", file=sys.stderr)
        return 2
    app_zip: Optional[str] = None
    if "://" not in args.app and not pick("no_ship_app"):
        from ...engine.deploy.app_modules import build_app_zip, find_app_modules

        found = find_app_modules(args.app)
        if found.unresolved:  # before spark-submit: nothing started yet
            for problem in found.unresolved:
                print(f"sparkwax submit: {problem.describe(os.getcwd())}", file=sys.stderr)
            return 2
        if found.files:
            app_zip = build_app_zip(found)
            print(found.summary(), file=sys.stderr, flush=True)
    if pick("once"):
        from ...engine.queries.catch_up import ONCE_CONF

        spark_args = ["--conf", f"{ONCE_CONF}=true", *spark_args]
    try:
        command, env = build_command(
            args.app, master=pick("master"), checkpoint=pick("checkpoint"),
            python=pick("python"), ship=pick("ship"), app_args=app_args,
            spark_args=spark_args, app_zip=app_zip, log_level=pick("spark_log_level"),
            verbose=bool(pick("verbose")), ship_app=not pick("no_ship_app"))
    except SparkwaxError as error:
        print(f"sparkwax submit: {error}", file=sys.stderr)
        return 2
    print(format_command(command, env), file=sys.stderr, flush=True)
    if own.dry_run or getattr(args, "dry_run", False):
        return 0
    if pick("verbose"):
        env[VERBOSE_ENV] = "1"  # the app's hook prints Python's traceback too
    return run_with_failure_block(command, {**os.environ, **env})


def run_with_failure_block(command: Sequence[str], env: Dict[str, str]) -> int:
    """``run_stoppable``, then, if the app failed and left its short block
    (``sparkwax._ops.failure``: the app's hook writes it to
    ``$SPARKWAX_FAILURE_FILE``), that block, as the last lines on stderr:
    after everything the JVM logs while it shuts down."""
    handle, path = tempfile.mkstemp(prefix="sparkwax-failure-", suffix=".txt")
    os.close(handle)
    try:
        code = run_stoppable(command, {**env, FILE_ENV: path})
        with open(path, encoding="utf-8", errors="replace") as block:
            text = block.read().strip()
        if code != 0 and text:
            print(text, file=sys.stderr, flush=True)
        return code
    finally:
        os.unlink(path)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_stoppable(command: Sequence[str], env: Dict[str, str], *,
                  say: Optional[Callable[[str], None]] = None) -> int:
    """Run ``command`` (spark-submit) and return its exit code, turning this
    process's Ctrl-C, SIGTERM and SIGHUP into a graceful stop of the app.

    spark-submit runs in its own session, so a terminal's Ctrl-C reaches only
    this process and is passed on exactly once. Its JVM starts with SIGINT
    ignored (as pyspark's own launcher starts it), so the first signal, sent
    on as SIGINT to the whole group, reaches the app's Python process only:
    ``sw.start`` stops the queries after the current micro-batch. A second
    signal sends SIGTERM (the app stops at once, the JVM runs its shutdown
    hooks), a third SIGKILL. An app that handles no signal itself ignores
    the first (SIGINT stays ignored in it) and ends at the second. A child
    that died of a signal exits 128 + N.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    received: List[int] = []
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by spark-submit (only SIGINT)
    try:
        process = subprocess.Popen(list(command), env=env, start_new_session=True)
    except BaseException:
        _restore(previous)
        raise

    def forward(number: int, frame: Any) -> None:
        received.append(number)
        name = signal.Signals(number).name
        if process.poll() is not None:
            return
        if len(received) == 1:
            say(f"sparkwax submit: {name}: asked the app to stop after the current "
                f"micro-batch (again to stop at once)")
            _signal_group(process.pid, signal.SIGINT)
        elif len(received) == 2:
            say(f"sparkwax submit: {name} again: stopping spark-submit now")
            _signal_group(process.pid, signal.SIGTERM)
        else:
            _signal_group(process.pid, signal.SIGKILL)

    try:
        for number in STOP_SIGNALS:
            signal.signal(number, forward)
        code = process.wait()
    finally:
        _restore(previous)
    return 128 - code if code < 0 else code


def _signal_group(group: int, number: int) -> None:
    try:
        os.killpg(group, number)
    except ProcessLookupError:  # the group has just gone
        pass


def _restore(handlers: Dict[signal.Signals, Any]) -> None:
    for number, handler in handlers.items():
        if handler is not None:  # None: a handler set outside Python, left as it is
            signal.signal(number, handler)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m sparkwax.cli.commands.submit ...`` (same as ``sparkwax submit ...``)."""
    import inspect

    parser = argparse.ArgumentParser(prog="sparkwax submit",
                                     description=inspect.getdoc(submit_command))
    configure(parser)
    return run(parser.parse_args(list(argv) if argv is not None else None))


__all__ = ["build_command", "configure", "format_command", "main", "run", "run_stoppable",
           "run_with_failure_block", "split_rest", "submit_command"]


if __name__ == "__main__":
    sys.exit(main())
