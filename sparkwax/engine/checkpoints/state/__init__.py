"""Tools on a checkpoint's state: ``sw.read_state`` (``frame``: the state as a
DataFrame, decoded on the executors, its rows in ``rows``), ``check_state``
(``restore_check``: does every stored snapshot restore through a new logic),
``sparkwax state show`` (``show``), ``sw.rescale`` (``rescale``, ``reshard``,
``derive``, ``batch_logs``) and the operator a tool is asked for (``asked``)."""
