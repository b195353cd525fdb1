"""A step onto a DataFrame: ``stateful``/``stateful_batch`` (``plan``),
``connect`` (``connecting``), the schemas a step reads and writes
(``schemas``) and a restart planned on its checkpoint's counts
(``recorded_counts``).
"""
