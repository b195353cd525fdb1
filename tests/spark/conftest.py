"""One session-scoped local[2] SparkSession for every Spark test."""

import os

import pytest
from hypothesis import settings

settings.register_profile("spark", max_examples=6, deadline=None, database=None,
                          suppress_health_check=list(__import__("hypothesis").HealthCheck))


def pytest_collection_modifyitems(items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    import sparkwax as sw

    session = sw.local_session("local[2]", shuffle_partitions=2,
                               conf={"spark.sql.streaming.pollingDelay": "10ms",
                                     "spark.sql.streaming.noDataProgressEventInterval": "10ms"})
    yield session
    session.stop()
