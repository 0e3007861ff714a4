"""`python -m compiler` runs the `tjc` command line."""

from compiler.cli.main import entry

entry()
