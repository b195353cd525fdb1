#!/usr/bin/env bash
# Run a Spark tier of the tests under another PySpark line, in a venv of its own.
#
#   bash tests/compat/run.sh 3.5            # build /tmp/compat/3.5 if missing, run the tier
#   bash tests/compat/run.sh 4.0 -k packed  # extra pytest arguments after the line
#
# `make compat LINE=3.5` runs it. The venv has the newest release of that line
# (pyspark==LINE.*), pyarrow, pandas<3, pytest, hypothesis and sparkwax editable
# without extras. 3.5 also gets pyarrow<16 and numpy<2: pyspark 3.5's
# applyInPandasWithState serializer slices Arrow batches with float offsets,
# which newer pyarrow refuses (TypeError in RecordBatch.slice); pyspark 3.5
# itself does not declare it.
# COMPAT_ROOT (default /tmp/compat) holds the venvs; COMPAT_TESTS overrides the
# test files. Not part of `make test` or .ci: docs/testing.md, "Other Spark lines".
set -euo pipefail
LINE="${1:?usage: run.sh LINE [pytest args...] (LINE: 3.5, 4.0, 4.1, 4.2, 4.3)}"
shift
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
ROOT="${COMPAT_ROOT:-/tmp/compat}"
VENV="$ROOT/$LINE"
PY="$VENV/bin/python"
if [ ! -f "$VENV/.installed" ]; then
    mkdir -p "$ROOT"
    "${PYTHON:-python3}" -m venv "$VENV"
    EXTRA=()
    [ "$LINE" = "3.5" ] && EXTRA=("pyarrow<16" "numpy<2")
    "$PY" -m pip install -q "pyspark==$LINE.*" pyarrow "pandas<3" pytest hypothesis "${EXTRA[@]}"
    "$PY" -m pip install -q -e "$HERE"
    touch "$VENV/.installed"
fi
"$PY" -c "import pyspark, pandas, pyarrow, numpy; print('pyspark', pyspark.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__, 'numpy', numpy.__version__)"
TESTS="${COMPAT_TESTS:-tests/spark/test_cross_host_spark.py tests/spark/test_available_now.py}"
cd "$HERE"
# shellcheck disable=SC2086
exec "$PY" -m pytest -q -p no:cacheprovider $TESTS "$@"
