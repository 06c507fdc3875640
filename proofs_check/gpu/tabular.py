"""Records from a CSV file (a header row of column names) or a JSON-lines file, read the same way,
for the inputs Kubernetes-style tooling exports: node lists and binding streams.

A file is CSV when its name ends in ``.csv`` or its first record does not start with ``{``; blank
lines and lines starting with ``#`` are skipped in both. Every record becomes a dict of the known
columns that are present (an empty CSV cell is absent); an unknown column or field, a row with
the wrong number of cells, or bad JSON is an :class:`AuditError` naming file, line and field.
"""
from __future__ import annotations

import csv
from typing import Any, Iterator

from heuristics.gpu.snapshot import decode, read_text, require_int
from heuristics.limits import line_problem, line_too_long
from proofs_check.gpu.audit_tally import AuditError

Record = tuple[int, str, dict[str, Any]]  # line number, "file:line", the record's fields


def content_lines(path: str, text: str | None = None) -> list[tuple[int, str]]:
    """(line number, text) of every line of ``path`` (of ``text``, when it was read already) that
    is not blank or a '#' comment. A line over the line limit (``--limit line=N``) is an
    AuditError naming it, before anything decodes it."""
    out = []
    for n, line in enumerate(read_text(path).splitlines() if text is None else text.splitlines(), start=1):
        if line_too_long(line):
            raise AuditError(f"{path}:{n}", None, line_problem())
        if line.strip() and not line.lstrip().startswith("#"):
            out.append((n, line))
    return out


def known_fields(d: Any, where: str, known: tuple[str, ...], what: str) -> dict[str, Any]:
    """``d`` as a JSON object whose keys are all in ``known``; ``what`` names it in errors."""
    if not isinstance(d, dict):
        raise AuditError(where, None, f"{what} must be a JSON object")
    for key in d:
        if key not in known:
            raise AuditError(where, key, f"unknown field of {what} (known: {', '.join(known)})")
    return d


def records(path: str, known: tuple[str, ...], what: str) -> Iterator[Record]:
    """Every record of ``path``; ``what`` names the file's kind in errors ("node list")."""
    lines = content_lines(path)
    if not lines:
        raise AuditError(path, None, f"empty {what}")
    if path.lower().endswith(".csv") or not lines[0][1].lstrip().startswith("{"):
        yield from _csv(path, lines, known, what)
    else:
        yield from _json_lines(path, lines, known, what)


def _csv(path: str, lines: list[tuple[int, str]], known: tuple[str, ...], what: str) -> Iterator[Record]:
    head_no, head = lines[0]
    columns = [c.strip() for c in next(csv.reader([head]))]
    for c in columns:
        if c not in known:
            raise AuditError(f"{path}:{head_no}", c, f"unknown column of a {what} (known: {', '.join(known)})")
    for lineno, line in lines[1:]:
        where = f"{path}:{lineno}"
        cells = next(csv.reader([line]))
        if len(cells) != len(columns):
            raise AuditError(where, None, f"{len(cells)} cells, the header has {len(columns)}")
        yield lineno, where, {c: v.strip() for c, v in zip(columns, cells) if v.strip()}


def _json_lines(path: str, lines: list[tuple[int, str]], known: tuple[str, ...], what: str) -> Iterator[Record]:
    for lineno, line in lines:
        where = f"{path}:{lineno}"
        d = known_fields(decode(line, path, lineno), where, known, f"a {what} record")
        yield lineno, where, {k: v for k, v in d.items() if v is not None and v != ""}


def as_int(value: Any, where: str, name: str, low: int, high: int | None = None) -> int:
    """An integer cell (CSV text or a JSON integer) in low..high."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise AuditError(where, name, f"{value!r} is not an integer") from None
    return require_int(value, where, name, low, high, AuditError)


def as_name(value: Any, where: str, name: str) -> str:
    """A name cell: text, or a JSON string or integer (compared as text)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise AuditError(where, name, f"{value!r} is not a name (a string)")
    return str(value)
