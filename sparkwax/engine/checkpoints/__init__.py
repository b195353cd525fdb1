"""Checkpoints through Spark's file systems: files next to a checkpoint
(``storage``), its snapshots (``snapshots``), what is damaged in one
(``diagnose``, ``offsets_files``), ``replay``, ``finish``, and in ``state``
``read_state``, ``check_state`` and ``rescale``. What the files mean, as pure
data, is ``sparkwax.engine.checkpoints.format``.
"""
