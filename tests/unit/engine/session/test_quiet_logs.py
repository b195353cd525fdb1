"""Spark's known-benign warnings (the state store's per-partition two, the
scheduler's "Cannot find active jobs" at a stop, the transformWithState
state server's end of socket, the hostname's loopback) are left out of Spark's log
(``sparkwax.engine.session.log_levels.BENIGN``) unless ``--verbose`` / traces or
INFO is asked; every other warning still shows."""

import argparse
import re

from sparkwax.cli.reader import session_options, verbose_settings
from sparkwax.engine.session import log_levels as logs

LOADED = ("HDFSBackedStateStoreProvider StateStoreProviderId[ storeId=StateStoreId[ "
          "operatorId=0, partitionId=1, storeName=default ], queryRunId=6c98 ]: The state for "
          "version 2 doesn't exist in loadedMaps. Reading snapshot file and delta files if "
          "needed...Note that this is normal for the first batch of starting query.")
COORDINATOR = "StateStoreCoordinator endpoint not available: Exception thrown in awaitResult: \n"
CANCEL = ("Failed to cancel job group 8cd9cd0f-7103-43ad-b7d8-bc35fc65138f. Cannot find active "
          "jobs for it.")
REAL = "Error cleaning up files for version 3 of StateStoreId(0, 1)"


def _filters(text):
    """The filters of a log4j2 properties text: {logger: regex}."""
    found = dict(line.split(" = ", 1) for line in text.splitlines()
                 if line.startswith("logger.benign"))
    filters = {}
    for key, value in found.items():
        if key.endswith(".name"):
            prefix = key[:-len(".name")]
            assert found[f"{prefix}.filter.benign.onMatch"] == "DENY"
            assert found[f"{prefix}.filter.benign.onMismatch"] == "NEUTRAL"
            filters[value] = found[f"{prefix}.filter.benign.regex"]
    return filters


def _denied(filters, logger, message):
    """Whether log4j2 drops ``message`` of ``logger``: the filter of its
    nearest configured ancestor matches (Java's (?s) as Python's flag)."""
    parts = logger.split(".")
    for end in range(len(parts), 0, -1):
        regex = filters.get(".".join(parts[:end]))
        if regex is not None:
            return re.fullmatch(regex.replace("(?s)", ""), message, re.S) is not None
    return False


def _text(level, traces=False):
    with open(logs.config_file(level, traces), encoding="utf-8") as handle:
        return handle.read()


def test_the_benign_warnings_are_denied_and_only_they():
    filters = _filters(_text("WARN"))
    state = "org.apache.spark.sql.execution.streaming.state"
    provider = (f"{state}.HDFSBackedStateStoreProvider StateStoreProviderId[ storeId="
                f"StateStoreId[ operatorId=0, partitionId=1, storeName=default ] ]")
    assert _denied(filters, provider, LOADED)  # the provider's logger name has the store id
    assert _denied(filters, f"{state}.StateStoreProvider", COORDINATOR)
    assert _denied(filters, "org.apache.spark.scheduler.DAGScheduler", CANCEL)
    assert not _denied(filters, f"{state}.StateStore", REAL)
    assert not _denied(filters, "org.apache.spark.scheduler.DAGScheduler", LOADED)
    assert not _denied(filters, "org.apache.spark.scheduler.TaskSetManager", CANCEL)
    for server in ("org.apache.spark.sql.execution.python.TransformWithStateInPandasStateServer",
                   "org.apache.spark.sql.execution.python.streaming."
                   "TransformWithStateInPySparkStateServer"):  # 4.0's, 4.3's
        assert _denied(filters, server, "No more data to read from the socket")
        assert not _denied(filters, server, "Error reading message: boom")
    assert _denied(filters, "org.apache.spark.util.Utils", "Your hostname, vm, resolves to a "
                   "loopback address: 127.0.0.1; using 192.0.2.2 instead (on interface eth0)")
    assert not _denied(filters, "org.apache.spark.util.Utils", REAL)
    assert _filters(_text("ERROR"))


def test_verbose_and_info_keep_them():
    assert _filters(_text("WARN", traces=True)) == {}
    assert _filters(_text("INFO")) == {}


def test_the_state_tools_verbose_option_picks_the_configuration_with_them():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    session_options(parser)
    assert verbose_settings(parser.parse_args(["ck"])) == {}
    chosen = verbose_settings(parser.parse_args(["ck", "--verbose"]))
    path = chosen[logs.CONF_KEY].split("file:", 1)[1]
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert _filters(text) == {} and "%ex{none}" not in text  # the traces too
    assert verbose_settings(parser.parse_args(["ck", "--verbose", "--remote", "sc://h:1"])) == {}
