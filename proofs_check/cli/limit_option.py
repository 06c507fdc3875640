"""``--limit SIZE=N``: the one flag that raises a size limit (``heuristics.limits``) for a run.

Every program that reads a size a run allocates in proportion to (nodes, instances, seeds, racks,
durations) adds it with :func:`add_limit_option`; the limits are reset to their defaults when the
parser is built and set as each ``--limit`` is parsed, so every later check (parsing included)
uses them. A bad setting is a :class:`heuristics.limits.LimitError`: one line, exit 2.
"""
from __future__ import annotations

import argparse
from typing import Any

from heuristics import limits
from heuristics.limits import Size


class _SetLimit(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        limits.set_limit(*limits.parse_setting(str(values)))
        getattr(namespace, self.dest).append(str(values))


def add_limit_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--limit SIZE=N`` (repeatable) to ``parser``; every limit back to its default."""
    limits.reset()
    defaults = ", ".join(f"{s.value}={n}" for s, n in limits.DEFAULTS.items())
    parser.add_argument(limits.FLAG, action=_SetLimit, default=[], metavar="SIZE=N",
                        help=f"raise a size limit for this run, SIZE one of {', '.join(s.value for s in Size)} "
                             f"(repeatable; defaults {defaults})")
