"""A nullable bigint column reaches the logic exactly (``InputLayout.null_longs``):
the plan sends its nulls as ``NULL_MICROS``, and ``read_group`` puts None
back, in the values and in the ``order_by`` columns, whatever rows it reads
and in whatever order (the hosts: tests/spark/hosts/test_type_edges.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sparkwax.engine.hosts.columns import INTEGER, NULL_MICROS, InputLayout, read_group

BIG = 2**60 + 1
FRAME = pd.DataFrame({"n": np.array([BIG, NULL_MICROS, 5], dtype="int64")})
LAYOUT = InputLayout(names=("n",), sources=("n",), kinds=(INTEGER,), scalar=True,
                     order_by=("n",), event_column=None, null_longs=("n",))


def test_the_nulls_come_back_in_values_and_order():
    values, _, order = read_group(FRAME, LAYOUT)
    assert values == [BIG, None, 5] and order == [[BIG, None, 5]]
    assert type(values[0]) is int


def test_the_rows_read_keep_their_own_nulls():
    values, _, order = read_group(FRAME, LAYOUT, np.array([1, 2]))
    assert values == [None, 5] and order == [[None, 5]]
    assert read_group(FRAME, LAYOUT, np.array([2, 0]))[0] == [5, BIG]


def test_a_column_not_named_is_read_as_it_is():
    plain = InputLayout(names=("n",), sources=("n",), kinds=(INTEGER,), scalar=True,
                        order_by=(), event_column=None)
    assert read_group(FRAME, plain)[0] == [BIG, NULL_MICROS, 5]
