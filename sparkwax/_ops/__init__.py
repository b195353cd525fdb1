"""Operations tooling, not the semantics and not public API: a failed app's
short block (``failure``), sparkwax errors rebuilt from Spark tasks
(``rebuild``), the batch hosts' GC threshold (``young_gc``), the text tables
(``tables``) and snapshots as JSON (``snapshot_json``)."""
