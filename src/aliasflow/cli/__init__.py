"""The ``aliasflow`` command line (``aliasflow --help``; exit codes in docs/cli.md)."""
from .app import app
from . import programs, trace  # noqa: F401 - they register their commands on ``app``


def main() -> None:  # console entry point
    app()


__all__ = ["app", "main"]
