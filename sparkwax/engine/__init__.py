"""The Spark host: the only package that imports pyspark.

>>> import sparkwax as sw                                          # doctest: +SKIP
>>> out = sw.stateful(events, key="user", builder=Session,         # doctest: +SKIP
...                   output_schema="start timestamp, end timestamp, events long",
...                   time=sw.EventTime("ts", watermark="10 minutes"))
"""

from ..errors import SchemaError
from .finish import finish
from .plan import STATE_SCHEMA, stateful, stateful_batch
from .progress import follow
from .session import STATE_STORES, local_session
from .start import start
from .state import read_state
from .state.rescale import rescale

__all__ = ["STATE_SCHEMA", "STATE_STORES", "SchemaError", "finish", "follow", "local_session",
           "read_state", "rescale", "start", "stateful", "stateful_batch"]
