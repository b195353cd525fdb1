"""Offset log files that are valid JSON but that Spark cannot restart from.

An ``offsets/N`` file (see ``sparkwax.engine.checkpoints.format.metadata_logs``) carries the batch's
metadata (``batchWatermarkMs``, ``batchTimestampMs`` and ``conf``: the SQL
settings Spark pins for the life of a checkpoint, read back at every
restart) and one offset per source. A character changed inside one of its
JSON strings leaves it valid JSON, and Spark then fails far from the cause:
a changed ``flatMapGroupsWithState.stateFormatVersion`` is
``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``, a changed provider class a bare
class name, a changed file-source offset "batches (...) don't exist". These
pure checks say what is wrong (``sparkwax.engine.checkpoints.diagnose.check_logs`` reads
the files and raises the ``CheckpointError``):

- ``metadata_problem``: the metadata's fields are well-formed, and the conf
  values Spark reads are values Spark accepts;
- ``pinned_conf_problem``: the conf agrees with what stays fixed for a
  checkpoint: the previous offsets file's conf (Spark copies it from batch to
  batch), the confs sparkwax recorded in its steps file, and the layout of
  the state the step wrote (``stateFormatVersion`` 2 keeps a ``groupState``
  struct);
- ``source_problem``: a file source's offset (``{"logOffset": N}``) is an
  entry of its log (``sources/I``), and does not go back.

>>> metadata_problem({"batchWatermarkMs": 0, "batchTimestampMs": 5,
...                   "conf": {"spark.sql.shuffle.partitions": "2x"}})
"has conf spark.sql.shuffle.partitions = '2x', not a positive whole number"
>>> pinned_conf_problem({"spark.sql.streaming.multipleWatermarkPolicy": "max"},
...                     previous=("offsets/4", {"spark.sql.streaming.multipleWatermarkPolicy": "min"}))
"has conf spark.sql.streaming.multipleWatermarkPolicy = 'max' where offsets/4 has 'min': Spark carries these settings unchanged from batch to batch, so one of the two files is damaged"
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ....errors import short_repr
from .metadata_logs import file_offset

STATE_PACKAGE = "org.apache.spark.sql.execution.streaming.state."
BUILT_IN_PROVIDERS = (STATE_PACKAGE + "HDFSBackedStateStoreProvider",
                      STATE_PACKAGE + "RocksDBStateStoreProvider")
CODECS = ("lz4", "lzf", "snappy", "zstd")
_CODEC_PACKAGE = "org.apache.spark.io."
_CODEC_CLASSES = ("LZ4CompressionCodec", "LZFCompressionCodec", "SnappyCompressionCodec",
                  "ZStdCompressionCodec")
RESCALED = "spark.sql.shuffle.partitions"
"""Not compared between files: ``sparkwax state rescale`` changes it from one
batch to the next (and the steps file after the offsets)."""
GROUP_STATE_VERSION = "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion"
_CONF_NAME = re.compile(r"spark\.[A-Za-z0-9_.\-]+")
_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+")
_WHOLE = re.compile(r"[0-9]+")

# conf -> (the values Spark accepts, as a phrase; a test of a value)
_CHOICES: Dict[str, Tuple[str, Any]] = {
    "spark.sql.shuffle.partitions": (
        "a positive whole number", lambda v: bool(_WHOLE.fullmatch(v)) and int(v) > 0),
    "spark.sql.streaming.stateStore.providerClass": (
        f"a state store provider class ({', '.join(p.rsplit('.', 1)[1] for p in BUILT_IN_PROVIDERS)} "
        f"in {STATE_PACKAGE[:-1]}, or a class of your own)",
        lambda v: v in BUILT_IN_PROVIDERS or (
            bool(_CLASS_NAME.fullmatch(v)) and not v.startswith(STATE_PACKAGE))),
    "spark.sql.streaming.stateStore.compression.codec": (
        f"a codec ({', '.join(CODECS)}) or a codec class", lambda v: v.lower() in CODECS or (
            bool(_CLASS_NAME.fullmatch(v)) and (not v.startswith(_CODEC_PACKAGE) or v[
                len(_CODEC_PACKAGE):] in _CODEC_CLASSES))),
    "spark.sql.streaming.multipleWatermarkPolicy": (
        "min or max", lambda v: v.lower() in ("min", "max")),
    GROUP_STATE_VERSION: ("1 or 2", lambda v: v in ("1", "2")),
    "spark.sql.streaming.aggregation.stateFormatVersion": ("1 or 2", lambda v: v in ("1", "2")),
    "spark.sql.streaming.stateStore.encodingFormat": (
        "unsaferow or avro", lambda v: v.lower() in ("unsaferow", "avro")),
}
_BOOLEAN = ("true or false", lambda v: v.lower() in ("true", "false"))
_VERSION = ("a whole number", lambda v: bool(_WHOLE.fullmatch(v)))
_BOOLEANS = ("spark.sql.streaming.statefulOperator.useStrictDistribution",
             "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan",
             "spark.sql.streaming.queryEvolution.enableSourceEvolution")


def _rule(name: str) -> Optional[Tuple[str, Any]]:
    if name in _CHOICES:
        return _CHOICES[name]
    if name in _BOOLEANS or name.endswith(".enabled"):
        return _BOOLEAN
    if name.endswith("Version"):
        return _VERSION
    return None


def metadata_problem(metadata: Any) -> Optional[str]:
    """What is wrong with an offsets file's metadata (its second line, parsed),
    or None."""
    if not isinstance(metadata, dict):
        return f"has metadata {short_repr(metadata)}, not a JSON object"
    for field in ("batchWatermarkMs", "batchTimestampMs"):
        value = metadata.get(field, 0)
        if type(value) is not int or (field == "batchTimestampMs" and value < 0):
            return f"has {field} {short_repr(value)}, not a time in epoch milliseconds"
    conf = metadata.get("conf", {})
    if not isinstance(conf, dict):
        return f"has conf {short_repr(conf)}, not a JSON object of settings"
    for name, value in conf.items():
        if not _CONF_NAME.fullmatch(name):
            return f"has a conf named {name!r}, not a Spark setting's name"
        if not isinstance(value, str):
            return f"has conf {name} = {short_repr(value)}, not a string"
        rule = _rule(name)
        if rule is not None and not rule[1](value):
            return f"has conf {name} = {value!r}, not {rule[0]}"
    return None


def pinned_conf_problem(conf: Mapping[str, Any], *,
                        previous: Optional[Tuple[str, Mapping[str, Any]]] = None,
                        recorded: Optional[Mapping[str, Any]] = None,
                        group_state: Optional[bool] = None) -> Optional[str]:
    """What in ``conf`` (an offsets file's) disagrees with what stays fixed for
    the checkpoint, or None. ``previous``: the older offsets file's name and
    conf (a setting newer Spark added may be in one only); ``recorded``: the
    confs of sparkwax's steps file (None values: not recorded);
    ``group_state``: whether the step's stored state values are a
    ``groupState`` struct (None: unknown)."""
    if previous is not None:
        name, before = previous
        for key in sorted(set(conf) & set(before) - {RESCALED}):
            if conf[key] != before[key]:
                return (f"has conf {key} = {conf[key]!r} where {name} has {before[key]!r}: "
                        f"Spark carries these settings unchanged from batch to batch, so one "
                        f"of the two files is damaged")
    for key, value in sorted((recorded or {}).items()):
        if value is not None and key in conf and key != RESCALED and conf[key] != str(value):
            return (f"has conf {key} = {conf[key]!r} where the checkpoint was started with "
                    f"{str(value)!r} (sparkwax-steps.json)")
    version = conf.get(GROUP_STATE_VERSION)
    if group_state is not None and version in ("1", "2") and (version == "2") != group_state:
        kept = "a groupState struct" if group_state else "no groupState struct"
        return (f"has conf {GROUP_STATE_VERSION} = {version!r}, but the step's state holds "
                f"{kept} (state format {'2' if group_state else '1'}): Spark would refuse "
                f"the state's schema (STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE)")
    return None


def source_problem(offsets: Sequence[Optional[str]], *,
                   previous: Optional[Tuple[str, Sequence[Optional[str]]]] = None,
                   source_logs: Optional[Mapping[int, Optional[int]]] = None) -> Optional[str]:
    """What is wrong with an offsets file's source offsets (one line each,
    None for ``-``), or None. ``previous``: the older offsets file's name and
    offsets; ``source_logs``: per file source index, the newest entry of its
    log ``sources/I`` (None: the folder holds none)."""
    for index, raw in enumerate(offsets):
        if raw is None:
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            return f"has source {index}'s offset {short_repr(raw[:60])}, which is not JSON"
        newest = (source_logs or {}).get(index)
        is_file = isinstance(value, dict) and "logOffset" in value
        looks_file = isinstance(value, dict) and any("ogOffset" in k or "logOffse" in k
                                                     for k in value)
        if source_logs and index in source_logs and not is_file:
            return (f"has source {index}'s offset {short_repr(raw[:60])}, but source {index} "
                    f"is a file source (sources/{index}), whose offsets are "
                    f"{{\"logOffset\": N}}")
        if looks_file and not is_file:
            return (f"has source {index}'s offset {short_repr(raw[:60])}: a file source's "
                    f"offset is {{\"logOffset\": N}}")
        if not is_file:
            continue
        offset = file_offset(raw)
        if offset is None or offset < 0:
            return (f"has source {index}'s offset {short_repr(raw[:60])}: a file source's "
                    f"offset is {{\"logOffset\": N}}, N a whole number")
        if newest is not None and offset > newest:
            return (f"has source {index}'s offset {short_repr(raw[:60])}, but the file "
                    f"source's log sources/{index} ends at entry {newest}")
    if previous is not None:
        name, before = previous
        if len(before) != len(offsets):
            return (f"has {len(offsets)} source offsets where {name} has {len(before)}: one "
                    f"of the two files is damaged")
        for index, (old, new) in enumerate(zip(before, offsets)):
            was, now = file_offset(old), file_offset(new)
            if was is not None and now is not None and now < was:
                return (f"has source {index}'s log offset {now}, before {name}'s {was}: a "
                        f"file source never goes back")
    return None


def value_has_group_state(schema_file: Optional[bytes]) -> Optional[bool]:
    """Whether a state partition's ``_metadata/schema`` (key schema JSON,
    then value schema JSON) has a ``groupState`` value struct, the layout of
    ``stateFormatVersion`` 2; None when the file says nothing readable."""
    if not schema_file:
        return None
    text = schema_file.decode("utf-8", errors="replace")
    starts = [m.start() for m in re.finditer(r'\{"type":"struct"', text)]
    decoder = json.JSONDecoder()
    schemas = []
    position = 0
    for start in starts:
        if start < position:
            continue
        try:
            schema, end = decoder.raw_decode(text[start:])
        except ValueError:
            return None
        schemas.append(schema)
        position = start + end
    if len(schemas) < 2 or not isinstance(schemas[1], dict):
        return None
    names = [f.get("name") for f in schemas[1].get("fields", []) if isinstance(f, dict)]
    return "groupState" in names


__all__ = ["BUILT_IN_PROVIDERS", "CODECS", "GROUP_STATE_VERSION",
           "metadata_problem", "pinned_conf_problem", "source_problem",
           "value_has_group_state"]
