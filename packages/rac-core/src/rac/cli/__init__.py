"""The ``rac`` command line."""

from rac.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
