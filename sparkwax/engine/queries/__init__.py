"""Running queries: the checked ``start`` and the ``Query`` it returns,
progress lines and signals (``progress``, ``listening``), quiet stops
(``stopping``), runs that end (``catch_up``), signals held while ``start``
runs (``start_guard``).
"""
