"""The Spark session the state and replay commands read a checkpoint with:
their shared options (``--master``, ``--remote``, ``--conf``) and the session
built from them."""

from __future__ import annotations

import argparse
import os
from typing import Any, Dict, List

from ..errors import ConfigError
from ..engine.checkpoints.format.paths import local_folder

# The reader's own session (when no --master): one core, one shuffle partition, a
# fixed 1 GB driver (no machine sizing), no UI, and a JVM tuned to start fast (the
# C1 compiler only, the serial collector): the work is a few small jobs.
READER_CONF = {
    "spark.default.parallelism": "1",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR -XX:TieredStopAtLevel=1 "
                                     "-XX:+UseSerialGC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}


def session_options(parser: argparse.ArgumentParser) -> None:
    """Where the checkpoint is read from: a local Spark (any Hadoop file
    system URI it can reach) or a Spark Connect server (its file systems)."""
    parser.add_argument("--master", default=None,
                        help="Spark master for the reader (default: a minimal local[1] "
                             "session, see READER_CONF)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT",
                        help="use a Spark Connect server instead (reads its file systems)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, e.g. spark.hadoop.fs.s3a.endpoint=...; "
                             "repeatable")
    parser.add_argument("--verbose", action="store_true",
                        help="Spark's known-benign state store warnings (one per partition: "
                             "'... doesn't exist in loadedMaps', 'StateStoreCoordinator "
                             "endpoint not available') and Java stack traces too")


def conf_settings(args: argparse.Namespace) -> Dict[str, str]:
    """``--conf KEY=VALUE`` options as a dict."""
    settings = {}
    for item in args.conf:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"--conf takes KEY=VALUE, got {item!r}")
        settings[name.strip()] = value
    return settings


def reader_session(args: argparse.Namespace, app_name: str) -> Any:
    """The Spark session that reads the checkpoint; a checkpoint that surely is
    on the local disk is checked first, so a wrong path fails before a JVM starts."""
    from ..engine.session.local_session import local_session

    settings = {**verbose_settings(args), **conf_settings(args)}
    folder = None if args.remote else local_folder(args.checkpoint, settings, os.environ)
    if folder is not None and not os.path.isdir(os.path.join(folder, "offsets")):  # local disk only
        from ..engine.checkpoints.snapshots import require_checkpoint

        require_checkpoint(LocalFolders(), args.checkpoint, folder)  # says what it holds
    if args.remote is None and args.master is None:
        from ..engine.spark_version import active_context

        running = active_context()
        if running is not None:  # called from a program: its session, its settings kept
            return local_session(running.master, app_name=app_name, conf=settings)
        return local_session("local[1]", app_name=app_name, shuffle_partitions=1,
                             conf={**READER_CONF, **settings})
    return local_session(args.master, app_name=app_name, conf=settings, remote=args.remote)


def verbose_settings(args: argparse.Namespace) -> Dict[str, str]:
    """With ``--verbose``: the driver's log4j2 configuration that keeps the
    known-benign warnings and the stack traces (``logs.config_file``)."""
    if not getattr(args, "verbose", False) or getattr(args, "remote", None):
        return {}  # a Connect server's JVM logs by its own configuration
    from ..engine.session import log_levels as logs

    return {logs.CONF_KEY: logs.java_option(logs.spark_log_level(None), traces=True)}


class LocalFolders:
    """The two calls of a checkpoint store that ``require_checkpoint`` makes,
    on the local disk (no JVM yet: a wrong path fails at once)."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)  # local disk only

    def list(self, path: str) -> List[Any]:
        """The visible subfolders of ``path`` (the only entries asked for)."""
        from ..engine.checkpoints.storage import FileEntry

        if not os.path.isdir(path):  # local disk only
            return []
        names = sorted(os.listdir(path))  # local disk only
        inside = [os.path.join(path, name) for name in names]  # local disk only
        return [FileEntry(os.path.basename(found), found, 0, True)  # local disk only
                for found in inside
                if not os.path.basename(found).startswith((".", "_"))  # local disk only
                and os.path.isdir(found)]  # local disk only


__all__ = ["LocalFolders", "READER_CONF", "conf_settings", "reader_session", "session_options",
           "verbose_settings"]
