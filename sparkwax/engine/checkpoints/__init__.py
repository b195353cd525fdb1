"""The one home of checkpoint code. Through Spark's file systems: files next
to a checkpoint (``storage``), its snapshots (``snapshots``), what is damaged
in one (``diagnose``, ``offsets_files``), what a query ran
(``batch_history``, for replay), ``finish``, a dead first run's leftovers
(``first_run``), who runs on it (``liveness``), a restart's wake-up batch
(``wake``) and what a restart cannot take (``step_changes``); in ``state``
``read_state``, ``check_state`` and ``rescale``. What the files mean, as pure
data (no pyspark), is ``format``.
"""
