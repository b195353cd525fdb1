"""The state store's known-benign warnings are left out of Spark's log
(``sparkwax.engine.deploy.logs.BENIGN``) unless ``--verbose`` / traces or
INFO is asked; every other warning still shows."""

import argparse
import re

from sparkwax.cli.reader import session_options, verbose_settings
from sparkwax.engine.deploy import logs

LOADED = ("HDFSBackedStateStoreProvider StateStoreProviderId[ storeId=StateStoreId[ "
          "operatorId=0, partitionId=1, storeName=default ], queryRunId=6c98 ]: The state for "
          "version 2 doesn't exist in loadedMaps. Reading snapshot file and delta files if "
          "needed...Note that this is normal for the first batch of starting query.")
COORDINATOR = "StateStoreCoordinator endpoint not available: Exception thrown in awaitResult: \n"
REAL = "Error cleaning up files for version 3 of StateStoreId(0, 1)"


def _filter(text):
    """The filter's (logger, regex) in a log4j2 properties text, or None."""
    found = dict(line.split(" = ", 1) for line in text.splitlines()
                 if line.startswith("logger.statestore."))
    if not found:
        return None
    assert found["logger.statestore.filter.benign.onMatch"] == "DENY"
    assert found["logger.statestore.filter.benign.onMismatch"] == "NEUTRAL"
    return found["logger.statestore.name"], found["logger.statestore.filter.benign.regex"]


def _text(level, traces=False):
    with open(logs.config_file(level, traces), encoding="utf-8") as handle:
        return handle.read()


def test_the_benign_state_store_warnings_are_denied_and_only_they():
    logger, regex = _filter(_text("WARN"))
    assert logger == "org.apache.spark.sql.execution.streaming.state"
    pattern = re.compile(regex.replace("(?s)", ""), re.S)  # Java's (?s) as Python's flag
    assert pattern.fullmatch(LOADED) and pattern.fullmatch(COORDINATOR)
    assert not pattern.fullmatch(REAL)
    assert _filter(_text("ERROR")) is not None


def test_verbose_and_info_keep_them():
    assert _filter(_text("WARN", traces=True)) is None
    assert _filter(_text("INFO")) is None


def test_the_state_tools_verbose_option_picks_the_configuration_with_them():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    session_options(parser)
    assert verbose_settings(parser.parse_args(["ck"])) == {}
    chosen = verbose_settings(parser.parse_args(["ck", "--verbose"]))
    path = chosen[logs.CONF_KEY].split("file:", 1)[1]
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert _filter(text) is None and "%ex{none}" not in text  # the traces too
    assert verbose_settings(parser.parse_args(["ck", "--verbose", "--remote", "sc://h:1"])) == {}
