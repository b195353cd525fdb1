"""The ``sparkwax demo``: an e-commerce clickstream through two stateful logics.

- ``clickstream``: a seeded generator of users, sessions, purchases and planted
  card-testing bursts, written as micro-batch files;
- ``logics``: ``UserSession`` (sessions per user) and ``CardFraud`` (alerts
  per card), plain ``StatefulLogic`` classes (no pyspark needed);
- ``app``: the Spark Structured Streaming job behind ``sparkwax demo``.
"""
