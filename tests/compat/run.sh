#!/usr/bin/env bash
# The compatibility tier: the tests marked `lines` under one PySpark line, in
# a venv of its own (docs/testing.md, "Other Spark lines").
#
#   bash tests/compat/run.sh 3.5            # build the venv if needed, run the tier
#   bash tests/compat/run.sh 4.0 -k packed  # extra pytest arguments after the line
#
# `make test` runs it for 3.5, 4.0, 4.1 and 4.2 after the whole suite on 4.3;
# `make compat LINE=3.5` runs one. The venv (COMPAT_ROOT, default
# .compat/LINE in the checkout) gets the line's newest pyspark with its
# Connect client and sparkwax's `test` extra, editable; 3.5 also pyarrow<16
# and numpy<2: pyspark 3.5's applyInPandasWithState serializer slices Arrow
# batches with float offsets, which newer pyarrow refuses (TypeError in
# RecordBatch.slice), and pyspark 3.5 does not declare it. The venv is
# brought up to date when setup.cfg or this script changes (pip's cache makes
# that fast). Two pytest runs, as `make test`: the Spark tier on a local
# session, then the Spark Connect tier against a server from the line's pip
# package (skipped on 3.5, whose package has none).
set -euo pipefail
LINE="${1:?usage: run.sh LINE [pytest args...] (LINE: 3.5, 4.0, 4.1, 4.2, 4.3)}"
shift
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
ROOT="${COMPAT_ROOT:-$HERE/.compat}"
VENV="$ROOT/$LINE"
PY="$VENV/bin/python"
WANT="$(cat "$HERE/setup.cfg" "$HERE/tests/compat/run.sh" | sha1sum | cut -c1-16)"
if [ "$(cat "$VENV/.installed" 2>/dev/null)" != "$WANT" ]; then
    mkdir -p "$ROOT"
    [ -x "$PY" ] || "${PYTHON:-python3}" -m venv "$VENV"
    EXTRA=()
    [ "$LINE" = "3.5" ] && EXTRA=("pyarrow<16" "numpy<2")
    "$PY" -m pip install -q --disable-pip-version-check "pyspark[connect]==$LINE.*" \
        -e "$HERE[test]" "${EXTRA[@]}"
    echo "$WANT" > "$VENV/.installed"
fi
"$PY" -c "import pyspark, pandas, pyarrow, numpy; print('compat tier: pyspark', pyspark.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__, 'numpy', numpy.__version__)"
cd "$HERE"
export SPARKWAX_COMPAT_LINE="$LINE"
# the newest line's venv, if built (make test builds it first): a 3.5 test reads its
# checkpoint from there, as docs/deploy.md advises
[ -x "$HERE/.venv/bin/python" ] && export SPARKWAX_NEWEST_PYTHON="$HERE/.venv/bin/python"
status=0
"$PY" -m pytest -q -p no:cacheprovider -m lines tests/spark tests/compat "$@" || status=$?
SPARKWAX_CONNECT_TESTS=1 "$PY" -m pytest -q -p no:cacheprovider -m lines tests/connect "$@" \
    || { rc=$?; [ "$rc" = 5 ] || status=$rc; }   # 5: no test ran (a -k that selects none)
exit "$status"
