"""A strict user's program (``mypy --strict``, imports followed) needs no
annotation on the operators' common lambdas (their type variables default
to Any, PEP 696), and the step options are typed once (``sw.StepOptions``):
a wrong option's type is an error in the user's editor on every entry point.
tests/unit/test_typing.py holds the other typing checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")

from test_typing import assert_marked_errors  # noqa: E402  (after the skip)

LAMBDAS = textwrap.dedent("""
    from __future__ import annotations

    from typing import Any

    import sparkwax as sw
    from sparkwax.operators import (fold, fold_final, reduce, reduce_final, stateful_filter,
                                    stateful_flat_map, stateful_map)
    from sparkwax.testing import Batch, Runner, check_logic, run, run_bounded

    acc = fold_final(lambda: 0, lambda acc, v: acc + v)
    lists = fold_final(list, lambda acc, v: acc + [v])
    running = fold(lambda: 0, lambda acc, v: acc + v)
    total = reduce_final(lambda a, b: a + b)
    sums = reduce(lambda a, b: a + b)
    counted = stateful_map(lambda state, v: ((state or 0) + 1, v))
    doubled = stateful_flat_map(lambda state, v: (state, [v, v]))
    kept = stateful_filter(lambda state, v: (state, v is not None))

    options: sw.StepOptions = {"step_id": "sum", "ttl": "30 minutes", "order_by": "ts",
                               "max_state_bytes": 1000}
    bounded = run_bounded(acc, [("a", 1)], **options)
    step = sw.Step.of(acc, max_state_bytes=1000, time=sw.ProcessingTime())
    streamed = run(step, [Batch([("a", 1)])], restore="on_crash")
    Runner(counted, sides=["left", "right"], output_schema="n long")
    check_logic(kept, max_examples=5, value="v")


    def on_spark(df: Any) -> Any:
        first = sw.stateful(df, key="user", step=step)
        second = sw.stateful_batch(df, key="user", builder=acc, order_by=["ts", "n"])
        third = sw.join(df, df, key="user", ttl="1 hour", host="packed")
        return sw.connect(df, df, key="user", builder=doubled, output_schema="n long"), \\
            first, second, third


    run_bounded(acc, [("a", 1)], order_by=5)  # E: arg-type
    run(acc, [], restore="bogus")  # E: arg-type
    Runner(acc, max_state_bytes="big")  # E: arg-type
    sw.Step.of(acc, oder_by="ts")  # E: call-arg


    def wrong_on_spark(df: Any) -> Any:
        return sw.stateful(df, key="user", builder=acc, ttl=5)  # E: arg-type
""")


def test_a_strict_users_lambdas_and_options(tmp_path: Path):
    assert_marked_errors(tmp_path / "user_lambdas.py", LAMBDAS)
