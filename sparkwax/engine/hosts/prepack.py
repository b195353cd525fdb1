"""The packed host's rows, packed per bucket before Spark's shuffle.

A packed step groups its rows by bucket (``pmod(xxhash64(key), buckets)``).
Handed to ``applyInPandasWithState`` as they are, every row crosses Spark's
shuffle, its sort and the Arrow trip to Python one by one. Packed first
(``pack_rows``, in a ``mapInArrow`` before the shuffle), each Arrow batch of
the input becomes one row per bucket it touches: the bucket, and that
bucket's rows as an Arrow IPC stream (``PAYLOAD``). About ``buckets`` rows
per 10k then cross the shuffle, and the host turns a bucket's payloads back
into the frame it would have received (``Unpacker``), with pyspark's own
Arrow-to-pandas conversion, so the values the logic sees are the same.

The rows of one input partition keep their order in its payloads; payloads
of several partitions interleave as rows of several partitions do. Spark's
late filter never sees an event time (the rows are inside the payloads):
every late row reaches the driver, which drops and counts it.

``pack_rows`` runs in a ``mapInArrow`` worker, which has no pandas loaded:
this module imports numpy and pyarrow only, pandas in ``Unpacker`` (a worker
importing pandas costs the first micro-batch a few hundred ms of CPU; see
docs/performance.md, "Start-up").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, List

import numpy as np

from .radix import radix_argsort

if TYPE_CHECKING:
    import pandas as pd

PAYLOAD = "__sw_rows"
"""The packed row's column holding its bucket's rows (an Arrow IPC stream)."""


def pack_rows(bucket_column: str, buckets: int) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: each Arrow batch as one ``(bucket,
    payload)`` row per bucket in it, the payload being the bucket's rows
    (every column but ``bucket_column``) in their order.

    >>> import pyarrow as pa
    >>> batch = pa.RecordBatch.from_pydict({"k": ["a", "b", "a"], "b": [1, 0, 1]})
    >>> out = next(pack_rows("b", 2)(iter([batch])))
    >>> out.column("b").to_pylist(), [read_payload(p).column("k").to_pylist()
    ...                               for p in out.column(PAYLOAD).to_pylist()]
    ([0, 1], [['b'], ['a', 'a']])
    """
    def pack(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            if batch.num_rows:
                yield packed_batch(pa, batch, bucket_column, buckets)
    return pack


def packed_batch(pa: Any, batch: Any, bucket_column: str, buckets: int) -> Any:
    """One Arrow batch's rows, one IPC payload per bucket (see ``pack_rows``)."""
    numbers = _int64_values(pa, batch.column(bucket_column))
    rows = batch.drop_columns([bucket_column])
    if len(numbers) > 1 and bool((numbers[1:] != numbers[:-1]).any()):
        order = radix_argsort(numbers, buckets)
        numbers = numbers[order]
        rows = rows.take(_int64_array(pa, order))
    starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
    ends = np.r_[starts[1:], len(numbers)]
    sink = pa.BufferOutputStream()  # the payloads end to end, one binary array
    offsets = [0]
    for start, end in zip(starts.tolist(), ends.tolist()):
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_batch(rows.slice(start, end - start))
        offsets.append(sink.tell())
    payloads = pa.Array.from_buffers(pa.binary(), len(starts), [
        None, pa.py_buffer(np.array(offsets, dtype=np.int32)), sink.getvalue()])
    return pa.RecordBatch.from_arrays([_int64_array(pa, numbers[starts]), payloads],
                                      names=[bucket_column, PAYLOAD])


# pyarrow imports pandas in ``pa.array`` and ``Array.to_numpy``; a mapInArrow
# worker has not (see the module's docstring), so the bucket numbers move
# through the arrays' buffers


def _int64_values(pa: Any, column: Any) -> np.ndarray:
    """A non-null int64 Arrow array's values, read from its buffer."""
    if column.type != pa.int64() or column.null_count:
        values: np.ndarray = column.to_numpy(zero_copy_only=False)
        return values
    return np.frombuffer(column.buffers()[1], dtype=np.int64, count=len(column),
                         offset=column.offset * 8)


def _int64_array(pa: Any, values: np.ndarray) -> Any:
    """An int64 Arrow array of ``values`` (ints), over their buffer."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def read_payload(payload: Any) -> Any:
    """A payload's rows as one Arrow table."""
    import pyarrow as pa

    with pa.ipc.open_stream(payload) as reader:
        return reader.read_all()


class Unpacker:
    """A bucket's packed chunks (frames of payloads) back into the frame of
    its rows, converted to pandas as pyspark converts an
    ``applyInPandasWithState`` group (``timezone``: the session time zone;
    ``prefer_int_ext_dtype``: its ``preferIntExtensionDtype`` conf)."""

    def __init__(self, timezone: str, prefer_int_ext_dtype: bool = False):
        self.timezone = timezone
        self.prefer_int_ext_dtype = prefer_int_ext_dtype

    def __call__(self, chunks: Iterable[pd.DataFrame]) -> pd.DataFrame:
        import pandas as pd
        import pyarrow as pa
        from ..spark_version import arrow_batch_transformer
        from .columns import _column_values

        transformer = arrow_batch_transformer()  # 4.2+: session.packed_unpacker chose us
        tables: List[Any] = [read_payload(payload) for chunk in chunks if len(chunk)
                             for payload in _column_values(chunk, PAYLOAD)]
        if not tables:
            return pd.DataFrame()
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        series = transformer.to_pandas(
            table, timezone=self.timezone, struct_in_pandas="dict", ndarray_as_list=False,
            prefer_int_ext_dtype=self.prefer_int_ext_dtype, df_for_struct=False)
        return pd.DataFrame(dict(zip(table.column_names, series)), copy=False)
