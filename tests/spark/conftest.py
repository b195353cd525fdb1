"""One session-scoped local[2] SparkSession for every Spark test."""

import os

import pytest
from hypothesis import settings

settings.register_profile("spark", max_examples=6, deadline=None, database=None,
                          suppress_health_check=list(__import__("hypothesis").HealthCheck))


def pytest_collection_modifyitems(items):
    """Mark the tests that use the shared session ``spark`` (tests that start
    Spark another way mark themselves; the rest run in ``make test-fast`` too),
    and ship test modules to Python workers by value: pytest puts them on the
    driver's sys.path only, so logic classes defined in a test module are not
    importable on workers by reference."""
    from pyspark import cloudpickle

    import kit

    cloudpickle.register_pickle_by_value(kit)   # its logics and helpers, likewise
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            if "spark" in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.spark)
            module = getattr(item, "module", None)
            if module is not None:
                cloudpickle.register_pickle_by_value(module)


@pytest.fixture(scope="session")
def spark():
    import sparkwax as sw

    session = sw.local_session("local[2]", shuffle_partitions=2,
                               conf={"spark.sql.streaming.pollingDelay": "10ms",
                                     "spark.sql.streaming.noDataProgressEventInterval": "10ms"})
    yield session
    session.stop()
