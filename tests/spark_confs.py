"""``confs``: Spark session confs set for a block, then put back."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def confs(spark, settings):
    """Set ``settings`` on ``spark`` for the block; afterwards each conf is
    what it was (unset if it was not set)."""
    before = {name: spark.conf.get(name, None) for name in settings}
    try:
        for name, value in settings.items():
            spark.conf.set(name, value)
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)
