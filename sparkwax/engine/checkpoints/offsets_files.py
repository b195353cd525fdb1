"""Read the files that say what an offsets file must agree with, and judge
the newest offsets files with ``sparkwax.engine.checkpoints.format.offsets`` (the restart check,
``diagnose.check_logs``, raises the ``CheckpointError``)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .format.metadata_logs import log_number, parse_offsets
from ...errors import SparkwaxError
from .format.offsets import (metadata_problem, pinned_conf_problem, source_problem,
                             value_has_group_state)
from .storage import join_path


def offsets_problem(store: Any, checkpoint: str, entries: Sequence[Any], operators: Sequence[int],
                    recorded: Optional[Mapping[str, Any]]) -> Optional[Tuple[str, str]]:
    """``(path, what is wrong)`` for the first of ``entries`` (the newest
    offsets files, newest first, each valid JSON) that Spark could not run
    from, or None. ``operators``: the checkpoint's state operators;
    ``recorded``: the confs of sparkwax's steps file, if any."""
    parsed: List[Tuple[Any, Any]] = []
    for entry in entries:
        try:
            data = store.read_bytes(entry.path)
            parsed.append((entry, parse_offsets(int(entry.name), data and data.decode("utf-8"),
                                                entry.path)))
        except SparkwaxError as error:
            return entry.path, str(error).split(": ", 1)[-1]
        except (ValueError, TypeError) as error:  # e.g. a watermark that is no number
            return entry.path, f"has metadata Spark cannot read ({error})"
    if not parsed:
        return None
    group_state = _group_state(store, checkpoint, operators)
    logs = _source_logs(store, checkpoint, len(parsed[0][1].offsets))
    for position, (entry, offsets) in enumerate(parsed):
        older = parsed[position + 1] if position + 1 < len(parsed) else None
        name = "" if older is None else f"offsets/{older[0].name}"
        problem = metadata_problem(offsets.metadata)
        if problem is None:
            problem = pinned_conf_problem(
                offsets.metadata.get("conf", {}), recorded=recorded, group_state=group_state,
                previous=None if older is None else (name, older[1].metadata.get("conf", {})))
        if problem is None:
            problem = source_problem(offsets.offsets, source_logs=logs, previous=None
                                     if older is None else (name, older[1].offsets))
        if problem is not None:
            return entry.path, problem
    return None


def _group_state(store: Any, checkpoint: str, operators: Sequence[int]) -> Optional[bool]:
    """Whether the first stateful operator's state values are a groupState
    struct (``stateFormatVersion`` 2), from its partition 0's schema file;
    None when unknown."""
    for operator in operators:
        try:
            if not _groups_with_state(store.read_bytes(join_path(
                    checkpoint, f"state/{operator}/_metadata/metadata"))):
                continue
            found = value_has_group_state(store.read_bytes(join_path(
                checkpoint, f"state/{operator}/0/_metadata/schema")))
        except Exception:  # unreadable: the state checks name it when Spark fails
            return None
        if found is not None:
            return found
    return None


def _groups_with_state(metadata: Optional[bytes]) -> bool:
    """Whether an operator's ``_metadata/metadata`` names a
    ``GroupState`` operator (whose layout the state format version sets)."""
    text = (metadata or b"").decode("utf-8", errors="replace")
    return '"operatorName":"applyInPandasWithState"' in text or \
        '"operatorName":"flatMapGroupsWithState"' in text


def _source_logs(store: Any, checkpoint: str, sources: int) -> Dict[int, Optional[int]]:
    """Per file source index, the newest entry of its log (``sources/I``)."""
    found: Dict[int, Optional[int]] = {}
    for index in range(sources):
        numbers = [number for number, _ in filter(None, (
            log_number(e.name) for e in store.list(join_path(checkpoint, f"sources/{index}"))))]
        if numbers:
            found[index] = max(numbers)
    return found


__all__ = ["offsets_problem"]
