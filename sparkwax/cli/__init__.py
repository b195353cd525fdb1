"""The ``sparkwax`` console script.

>>> main(["--version"])                                     # doctest: +SKIP
sparkwax 0.1.0

Each subcommand is one function, in a module of its own under
``sparkwax/cli/commands/`` (demo, state, submit, replay), that takes its
argparse sub-parser, adds its options and returns the handler
(``handler(args) -> exit code``); registering it is one line in
``COMMANDS``: ``"module:function"`` (imported when the parser is built, not
with this package, so ``python -m sparkwax.cli.commands.submit`` loads that
module once), or the function itself.
Import heavy modules (pyspark) inside the handler, not at the top, so
``sparkwax --help`` stays instant::

    def state_command(parser):
        \"\"\"Show the live state of a checkpointed query.\"\"\"
        parser.add_argument("checkpoint")
        def handler(args):
            ...
            return 0
        return handler

    COMMANDS = {"state": "sparkwax.cli.commands.state:state_command"}

The first line of the function's docstring is the subcommand's one-line help,
the whole docstring its description.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from typing import Callable, Dict, List, Optional, Sequence, Union

Handler = Callable[[argparse.Namespace], int]
Command = Callable[[argparse.ArgumentParser], Handler]

COMMANDS: Dict[str, Union[Command, str]] = {  # one module a command: sparkwax/cli/commands/
    "demo": "sparkwax.cli.commands.demo:demo_command",
    "state": "sparkwax.cli.commands.state:state_command",
    "submit": "sparkwax.cli.commands.submit:submit_command",
    "replay": "sparkwax.cli.commands.replay:replay_command",
}


def load_command(command: Union[Command, str]) -> Command:
    """``command``, or the function a ``"module:function"`` entry names."""
    if isinstance(command, str):
        module, _, name = command.partition(":")
        loaded: Command = getattr(importlib.import_module(module), name)
        return loaded
    return command


def build_parser(commands: Optional[Dict[str, Union[Command, str]]] = None
                 ) -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="sparkwax",
        description="sparkwax: Bytewax-style per-key stateful logic, tested offline, "
                    "run on Apache Spark Structured Streaming.")
    parser.add_argument("--version", action="version", version=f"sparkwax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, entry in (commands or COMMANDS).items():
        command = load_command(entry)
        doc = inspect.getdoc(command) or ""
        summary = doc.splitlines()[0] if doc else None
        child = sub.add_parser(name, help=summary, description=doc or None,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        child.set_defaults(handler=command(child))
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``sparkwax`` command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return int(handler(args) or 0)


__all__: List[str] = ["COMMANDS", "build_parser", "load_command", "main"]
