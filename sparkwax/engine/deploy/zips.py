"""Deterministic zips and the folder where the engine keeps them: shared by
``shipping`` (the sparkwax zip), ``app_modules`` (the main script's own
modules) and ``logs`` (log4j2 files), so neither of the first two imports
the other's module for them."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from typing import Any, Iterable, Tuple

CACHE_ENV_KEY = "SPARKWAX_SHIP_DIR"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip timestamps: fixed, so equal sources give equal bytes


def zip_bytes(files: Iterable[Tuple[str, str]]) -> bytes:
    """A deterministic zip of ``files`` (same contents, same bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, name in files:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(path, "rb") as handle:
                archive.writestr(info, handle.read())
    return buffer.getvalue()


def cache_dir() -> str:
    """Where zips are kept: ``$SPARKWAX_SHIP_DIR`` or a per-user temp folder."""
    folder = os.environ.get(CACHE_ENV_KEY) or os.path.join(
        tempfile.gettempdir(), f"sparkwax-ship-{_user()}")
    os.makedirs(folder, exist_ok=True)
    return folder


def _user() -> str:
    try:
        return str(os.getuid())
    except AttributeError:  # Windows
        return os.environ.get("USERNAME", "user")




def submitted_py_files(sc: Any) -> str:
    """``spark.submit.pyFiles`` of the SparkContext ``sc``, read from its
    own conf (``sc.getConf()`` copies every entry over py4j first: ~120
    round trips before a step's first micro-batch)."""
    conf = getattr(sc, "_conf", None) or sc.getConf()
    return str(conf.get("spark.submit.pyFiles", "") or "")


__all__ = ["CACHE_ENV_KEY", "cache_dir", "submitted_py_files", "zip_bytes"]
