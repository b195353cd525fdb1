"""The public names of sparkwax, sparkwax.operators and sparkwax.testing, pinned
(in the style of httpx's tests/test_exported_members.py): every name in
``__all__`` exists, every public attribute that is not a module is in
``__all__``, and the lists change only on purpose."""

from __future__ import annotations

import importlib
import types

import pytest

PUBLIC = {
    "sparkwax": [
        "Builder", "BuilderError", "CallbackError", "CheckpointError", "CheckpointInUseError",
        "Clock", "ConfigError", "DISCARD",
        "EventTime", "InputError", "LogicError", "LostStateWarning", "NotifyAtError",
        "ProcessingTime", "RETAIN", "RescaleError", "ReturnValueError", "SchemaError", "SnapshotError",
        "SparkwaxError", "StatefulBatchLogic", "StatefulLogic", "Step", "StepOptions", "chain", "connect",
        "current_clock", "encode_snapshot", "finish", "follow", "join", "local_session", "now", "processing_now",
        "read_state", "rescale", "seed_frame", "split_late", "start", "stateful", "stateful_batch", "task_errors", "value_fields", "value_struct",
    ],
    "sparkwax.operators": [
        "LATE_SESSION_ID", "OperatorBuilder", "Rules", "SessionWindower", "SlidingWindower",
        "StateTooLarge", "Tagged", "Throttled", "Timers", "Ttl", "TumblingWindower",
        "WindowOut", "collect", "collect_window", "count_final", "count_window",
        "deduplicate", "fold", "fold_final", "fold_window", "join_window", "joiner",
        "max_final", "max_window", "mean_window", "min_final", "min_window", "reduce",
        "reduce_final", "reduce_window", "rules_from", "sequence", "session",
        "stateful_filter", "stateful_flat_map", "stateful_map", "sum_window", "tag",
        "throttle", "window_schema", "with_max_wait", "with_rules",
        "with_state_limit", "with_ttl",
    ],
    "sparkwax.testing": [
        "Batch", "Crash", "Eof", "ReplayResult", "RunResult", "Runner", "Script", "ScriptStep",
        "Tick", "check_logic", "describe", "replay", "run", "run_bounded", "run_flow",
    ],
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_all_is_pinned(name):
    module = importlib.import_module(name)
    assert sorted(module.__all__) == PUBLIC[name]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_attribute_is_exported_and_every_export_exists(name):
    module = importlib.import_module(name)
    exported = set(module.__all__)
    for member in dir(module):
        if member.startswith("_") or isinstance(getattr(module, member, None), types.ModuleType):
            continue
        if name == "sparkwax" and member == "annotations":
            continue
        assert member in exported, f"{name}.{member} is public but not in __all__"
    for member in exported:
        assert hasattr(module, member), f"{name}.__all__ names {member!r}, which is missing"
