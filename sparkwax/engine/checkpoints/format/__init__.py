"""What a streaming checkpoint's files mean, read as data (core: no pyspark,
no I/O; the engine reads the files through Spark's file systems): Spark's
offset, commit, source and sink logs (``metadata_logs``), what a damaged file looks like
(``files``), the offsets checks (``offsets``) and paths as Spark sees them
(``paths``).
"""
