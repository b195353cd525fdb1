"""sparkwax errors raised in Spark tasks come back as themselves (sparkwax/_ops/rebuild.py):
the texts below are the shapes Spark 4 gives (a streaming query's and a batch
action's); tests/spark/checkpoints/test_damaged_checkpoint.py catches real ones."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax._ops.rebuild import rebuild

STREAMING = (
    "[STREAM_FAILED] Query [id = 8299ea60, runId = 13216308] terminated with exception: "
    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
    "recent call last):\n"
    '  File "/work/sparkwax/engine/host.py", line 55, in __call__\n'
    "    act = self.driver.activate(key, stored, values, now_ms)\n"
    "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/work/sparkwax/_driver.py", line 545, in _items\n'
    "    raise CallbackError(self.step_id, key, \"on_item\", value,\n"
    "{raised}\n SQLSTATE: 38000 SQLSTATE: XXKST\n"
    "=== Streaming Query ===\n"
    "Identifier: [id = 8299ea60, runId = 13216308]\n"
    "Current Committed Offsets: {{}}\n")
BATCH = ("An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
         '  File "/work/sparkwax/engine/outputs.py", line 137, in _mismatch\n'
         "    raise SchemaError(self.step_id, key, \"output\", value,\n{raised}")


def _spark_error(raised: str, shape: str = STREAMING) -> Exception:
    return RuntimeError(shape.replace("{raised}", raised).replace("{{}}", "{}"))


def test_a_callback_error_keeps_its_fields():
    raised = ("sparkwax.errors.CallbackError: step 'counts', key 'a(b), c', on_item: on_item "
              "raised ValueError(\"cannot handle 'x'\\nsecond line\") on this value (got 'x')")
    error = rebuild(_spark_error(raised))
    assert type(error) is sw.CallbackError and isinstance(error, RuntimeError)
    assert (error.step_id, error.key, error.callback, error.value) == (
        "counts", "a(b), c", "on_item", "x")
    assert error.reason == "on_item raised ValueError(\"cannot handle 'x'\\nsecond line\") " \
                           "on this value"
    assert str(error) == raised.split(": ", 1)[1]


@pytest.mark.parametrize("shape", [STREAMING, BATCH])
def test_a_schema_error_with_a_tuple_key_and_a_field(shape):
    raised = ("sparkwax.errors.SchemaError: step 'ids', key ('u1', 7), output field 'n': "
              "2**40 does not fit int (got {'n': 1099511627776})")
    error = rebuild(_spark_error(raised, shape))
    assert type(error) is sw.SchemaError
    assert (error.step_id, error.key, error.callback, error.value) == (
        "ids", ("u1", 7), "output field 'n'", {"n": 1099511627776})
    assert error.field == "n"


@pytest.mark.parametrize("callback, field", [("output field \"tags['\\\\ud800']\"", "tags['\\ud800']"),
                                             ("output field 'items[1].price'", "items[1].price"),
                                             ("output", None)])
def test_a_schema_error_keeps_its_field_path(callback, field):
    raised = f"sparkwax.errors.SchemaError: step 's', key 'k', {callback}: does not fit (got 1)"
    error = rebuild(_spark_error(raised))
    assert (type(error), error.callback, error.field) == (sw.SchemaError, callback, field)


def test_a_value_that_is_no_literal_comes_back_as_its_text():
    raised = ("sparkwax.errors.SchemaError: step 's', key 'k', output: emitted dict does not "
              "match (got {'ts': datetime.datetime(2024, 1, 1, 0, 0)})")
    error = rebuild(_spark_error(raised))
    assert error.value == "{'ts': datetime.datetime(2024, 1, 1, 0, 0)}"
    assert error.reason == "emitted dict does not match"


def test_an_error_without_a_value():
    raised = ("sparkwax.errors.InputError: step 'keyed', key None, key: a null or NaN key; "
              "drop such rows first (df.na.drop)")
    error = rebuild(_spark_error(raised, BATCH))
    assert type(error) is sw.InputError and error.key is None and error.value is None
    assert error.reason.startswith("a null or NaN key")


def test_a_config_error_keeps_its_lines():
    raised = ("sparkwax.errors.ConfigError: step 'sum': the checkpoint's state was written "
              "with buckets=3\n  - second line")
    error = rebuild(_spark_error(raised))
    assert type(error) is sw.ConfigError
    assert str(error) == raised.split(": ", 1)[1]


def test_other_errors_are_left_to_spark():
    assert rebuild(RuntimeError("[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] boom")) is None
    assert rebuild(_spark_error("ValueError: not ours")) is None
    assert rebuild(_spark_error("sparkwax.errors.NoSuchError: step 'x', key 1, a: b")) is None
    assert rebuild(_spark_error("os.system: step 'x'")) is None
    assert rebuild(sw.ConfigError("already ours")) is None
    # a sparkwax error that was handled, then another one failed the task
    handled = ("sparkwax.errors.SnapshotError: step 's', key 'k', decode: bad\n\n"
               "During handling of the above exception, another exception occurred:\n\n"
               "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
               "KeyError: 'k'")
    assert rebuild(_spark_error(handled, BATCH)) is None


def test_task_errors_raises_the_rebuilt_error_from_sparks():
    raised = "sparkwax.errors.SchemaError: step 's', key 'k', output field 'n': no (got 1)"
    spark_error = _spark_error(raised)
    with pytest.raises(sw.SchemaError) as caught:
        with sw.task_errors():
            raise spark_error
    assert caught.value.__cause__ is spark_error
    with pytest.raises(KeyError):
        with sw.task_errors():
            raise KeyError("untouched")
