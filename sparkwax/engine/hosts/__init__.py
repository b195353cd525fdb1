"""What Spark runs per group: the per-key host (``host``), the packed host
(``packed``, ``bucket``, ``prepack``, ``radix``), the hosts of a step with both
timer kinds (``two_clocks``), rows in (``columns``) and out (``outputs``).
They translate Spark's groups and clocks and call the driver (``sparkwax._driver``).
"""
