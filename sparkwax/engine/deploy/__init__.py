"""Getting a step to the executors: shipping sparkwax and the app's own
modules (``shipping``, ``app_modules``, ``zips``) and, for Spark Connect,
``carrier``; and what a plan reads of the session it runs on
(``session_confs``). The session itself is ``sparkwax.engine.session``.
"""
