"""The front ends: every command's argument parsing and printing, and the launch of the
terminal UI. Commands import the core only when they run; the core never imports them.

`console` is the `campaign-planner` script; `main` runs one command line in process.
"""

from planner.cli.main import console, main

__all__ = ["console", "main"]
