"""`--exclude GLOB` of the verbs that walk folders (render, validate): what the walk leaves
out besides hidden entries, `node_modules` and what `.gitignore` files say
(`compiler.io.walkfilter`)."""

from __future__ import annotations

import argparse


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--exclude GLOB` (repeatable)."""
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="in folders, leave out files and folders whose name or path "
                        "below the folder matches GLOB (e.g. 'charts/*', '*.values.yaml'); "
                        "may be repeated. Folder walks always leave out hidden entries, "
                        "node_modules and what .gitignore files ignore")
