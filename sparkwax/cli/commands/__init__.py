"""The ``sparkwax`` subcommands, one module each (``sparkwax.cli.COMMANDS``
lists them): demo, state (show, clear, check, rescale), submit, replay."""
