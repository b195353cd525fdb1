"""Getting a step to the executors: the embedded local session (``session``,
``logs``), shipping sparkwax and the app's own modules (``shipping``,
``app_modules``, ``zips``) and, for Spark Connect, ``carrier``.
"""
