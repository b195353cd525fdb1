"""A step onto a DataFrame: ``stateful``/``stateful_batch`` (``plan``),
``connect`` (``connecting``) and the schemas a step reads and writes
(``schemas``).
"""
