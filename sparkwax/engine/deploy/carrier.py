"""Carry sparkwax inside a step's function, for Spark Connect.

Over Spark Connect the engine adds sparkwax's zip to the session with
``addArtifacts(zip, pyfile=True)``. Spark 4.3 puts session artifacts on the
Python path of batch jobs' workers, but not of the workers a streaming query's
micro-batches start (its jobs run outside the session's artifact scope), so a
step on a server without sparkwax installed fails there with
``ModuleNotFoundError: No module named 'sparkwax'``. ``carry`` closes that
gap: it wraps the step's function in a self-contained function (it refers to
nothing outside the standard library, so it unpickles anywhere) holding the
zip's bytes and the pickled step. On first use in a worker it writes the zip
to the worker's temp folder (once per machine and zip), puts it first on
``sys.path`` unless the worker already imported sparkwax, and unpickles the
step. The zip travels with the function (about 105 KB per task).

>>> def step(key, frame):
...     return frame
>>> carried = carry(step, zip_bytes=b"", zip_name="sparkwax-0-test.zip")
>>> carried.__name__, carried("k", [1, 2])
('step', [1, 2])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, List


def carry(function: Callable[..., Any], *, zip_bytes: bytes, zip_name: str
          ) -> Callable[..., Any]:
    """A function with ``function``'s arity (1 to 3 arguments, as PySpark
    inspects it) that loads sparkwax from ``zip_bytes`` before running it."""
    from pyspark import cloudpickle

    # pyspark's bundled cloudpickle has no annotations
    blob: bytes = cloudpickle.dumps(function)  # type: ignore[no-untyped-call, unused-ignore]
    loaded: List[Callable[..., Any]] = []

    def load() -> Callable[..., Any]:
        if not loaded:
            import os
            import pickle
            import sys
            import tempfile

            if "sparkwax" not in sys.modules and zip_bytes:
                folder = os.path.join(tempfile.gettempdir(), "sparkwax-carried")
                os.makedirs(folder, exist_ok=True)
                path = os.path.join(folder, zip_name)
                if not (os.path.isfile(path) and os.path.getsize(path) == len(zip_bytes)):
                    staging = f"{path}.{os.getpid()}.tmp"
                    with open(staging, "wb") as handle:
                        handle.write(zip_bytes)
                    os.replace(staging, path)  # atomic: other workers never see half a zip
                if path not in sys.path:
                    sys.path.insert(0, path)
            loaded.append(pickle.loads(blob))
        return loaded[0]

    arity = len(inspect.signature(function).parameters)
    carried: Callable[..., Any]
    if arity == 1:
        def carried(first: Any) -> Any:
            return load()(first)
    elif arity == 2:
        def carried(first: Any, second: Any) -> Any:
            return load()(first, second)
    elif arity == 3:
        def carried(first: Any, second: Any, third: Any) -> Any:
            return load()(first, second, third)
    else:
        raise TypeError(f"carry takes functions of 1 to 3 arguments, got {arity}")
    carried.__name__ = carried.__qualname__ = function.__name__
    return carried


__all__ = ["carry"]
