"""Where ``sparkwax state show CHECKPOINT [OPTIONS]`` spends its time: a
timestamp after the imports, the JVM's start, the session, the statestore
reader's load and the read(s). Run it with no other Spark job on the machine,
with the tree to measure first on PYTHONPATH:

    PYTHONPATH=$PWD python benchmarks/state_show_timing.py /tmp/ck --limit 0

(the table goes to $SHOW_OUT, default /tmp/state-show.txt; docs/performance.md has the figures).
"""
import contextlib
import io
import os
import sys
import time

t0 = time.time()
marks = []
def mark(what): marks.append((what, time.time() - t0))
import pyspark.java_gateway as jg, pyspark.context as pc
import sparkwax.engine.session.local_session as S, sparkwax.engine.checkpoints.snapshots as C
mark("imports (pyspark, sparkwax)")
orig_lg = jg.launch_gateway
def lg(*a, **k):
    r = orig_lg(*a, **k); mark("JVM started (spark-submit gateway)"); return r
pc.launch_gateway = lg
orig_ls = S.local_session
def ls(*a, **k):
    r = orig_ls(*a, **k); mark("SparkContext + SparkSession ready"); return r
S.local_session = ls
orig_sf = C.state_frame
def sf(*a, **k):
    r = orig_sf(*a, **k); mark("statestore reader loaded (schema)"); return r
C.state_frame = sf
for name in ("read_entries", "state_summary", "read_state"):
    if hasattr(C, name):
        def wrap(f, name=name):
            def g(*a, **k):
                r = f(*a, **k); mark(f"{name} done"); return r
            return g
        setattr(C, name, wrap(getattr(C, name)))
from sparkwax.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["state", "show"] + sys.argv[1:])
mark("printed")
open(os.environ.get("SHOW_OUT", "/tmp/state-show.txt"), "w").write(out.getvalue())
for w, t in marks: print(f"{t:7.2f} s  {w}", file=sys.stderr)
print("exit", code, file=sys.stderr)
