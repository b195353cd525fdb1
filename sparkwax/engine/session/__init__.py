"""The local session a program starts with (``local_session``), its log
levels (``log_levels``), a quiet Ctrl-C (``interrupts``) and a quiet end
(``ending``). The top of the engine: it may stop queries."""
