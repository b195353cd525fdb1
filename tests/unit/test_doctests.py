"""The runnable examples in the docstrings of the offline modules hold."""

import doctest
import importlib

import pytest

MODULES = [
    "sparkwax", "sparkwax.errors", "sparkwax.logic", "sparkwax.timers", "sparkwax.recovery",
    "sparkwax._driver", "sparkwax._driver.results", "sparkwax._driver.order",
    "sparkwax._driver.routes", "sparkwax.testing", "sparkwax.testing.runner",
    "sparkwax.testing.result", "sparkwax.testing.bounded",
    "sparkwax.testing.script", "sparkwax.testing.reference", "sparkwax.testing.strategies",
    "sparkwax.testing.strategies.logic_check", "sparkwax.cli.commands.state",
    "sparkwax.operators.windows.windowers", "sparkwax.operators.windows._aggs",
    "sparkwax.cli.demo.report", "sparkwax.engine.checkpoints.format.paths", "sparkwax.engine.queries.progress",
    "sparkwax._ops.snapshot_json", "sparkwax.engine.checkpoints.state.rows",
    "sparkwax.operators.windows.out", "sparkwax.cli.demo.options", "sparkwax.clock",
    "sparkwax.metrics", "sparkwax.cli.demo.hosts", "sparkwax.step", "sparkwax.sides",
    "sparkwax.builders", "sparkwax.expiry", "sparkwax.limits", "sparkwax.engine.checkpoints.format.metadata_logs",
    "sparkwax.testing.checkpoint_replay", "sparkwax.cli.commands.replay", "sparkwax.engine.checkpoints.batch_history", "sparkwax.schema",
    "sparkwax._ops.young_gc", "sparkwax._ops.tables", "sparkwax.cli.arg_types",
    "sparkwax.engine.checkpoints.state.asked", "sparkwax.engine.session.log_levels",
    "sparkwax.engine.spark_version", "sparkwax.engine.checkpoints.step_changes",
    "sparkwax.engine.deploy.session_confs", "sparkwax.engine.checkpoints.storage",
]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
    assert attempted > 0, f"{name} has no runnable example"
