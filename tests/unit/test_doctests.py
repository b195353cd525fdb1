"""The runnable examples in the docstrings of the offline modules hold."""

import doctest
import importlib

import pytest

MODULES = [
    "sparkwax", "sparkwax.errors", "sparkwax.logic", "sparkwax.timers", "sparkwax.recovery",
    "sparkwax._driver", "sparkwax._driver.results", "sparkwax._driver.order",
    "sparkwax._driver.routes", "sparkwax.testing", "sparkwax.testing.runner",
    "sparkwax.testing.script", "sparkwax.testing.reference", "sparkwax.testing.strategies",
    "sparkwax.testing.strategies.check", "sparkwax.cli.state",
    "sparkwax.operators.windows.windowers", "sparkwax.operators.windows._aggs",
    "sparkwax.cli.demo.report", "sparkwax.checkpoint_format.paths", "sparkwax.engine.queries.progress",
    "sparkwax.snapshot_json", "sparkwax.engine.checkpoints.state.rows",
    "sparkwax.operators.windows.out", "sparkwax.cli.demo.options", "sparkwax.clock",
    "sparkwax.metrics", "sparkwax.cli.demo.hosts", "sparkwax.step", "sparkwax.sides",
    "sparkwax.builders", "sparkwax.expiry", "sparkwax.limits", "sparkwax.checkpoint_format.logs",
    "sparkwax.testing.replay", "sparkwax.cli.replay", "sparkwax.engine.checkpoints.replay", "sparkwax.schema",
    "sparkwax.young_gc", "sparkwax.tables", "sparkwax.cli.arg_types",
    "sparkwax.engine.checkpoints.state.asked", "sparkwax.engine.deploy.logs",
    "sparkwax.engine.spark_version",
]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
    assert attempted > 0, f"{name} has no runnable example"
