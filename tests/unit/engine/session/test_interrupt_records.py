"""py4j's log records of a Ctrl-C are dropped, others kept
(sparkwax/engine/session/interrupts.py; no Spark)."""

import logging
import sys

from sparkwax.engine.session.interrupts import PY4J_RECORD, _DropPy4jInterrupt


def _record(message, error=None):
    exc_info = (type(error), error, None) if error is not None else None
    return logging.LogRecord("py4j.clientserver", logging.ERROR, __file__, 1, message, None,
                             exc_info)


def _raised_while_interrupted():
    try:
        try:
            raise KeyboardInterrupt()
        except KeyboardInterrupt:
            raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        return sys.exc_info()[1]


def test_the_records_of_an_interrupt_are_dropped_and_the_rest_kept():
    drop = _DropPy4jInterrupt()
    assert not drop.filter(_record(PY4J_RECORD, KeyboardInterrupt()))
    assert not drop.filter(_record("Exception occurred while shutting down connection",
                                   _raised_while_interrupted()))
    assert drop.filter(_record("Exception occurred while shutting down connection",
                               BrokenPipeError(32, "Broken pipe")))
    assert drop.filter(_record("Callback server started"))
