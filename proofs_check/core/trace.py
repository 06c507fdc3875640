"""The one counterexample / witness format (versioned, with a JSON Schema in this folder).

``verify --json`` writes a record per violated claim (``counterexample``) or reached target
(``stats.witness``); ``verify --replay`` reads them back. Every record carries
``format_version`` and ``kind``; a ``trace`` record is an event sequence of a state model — the
actions in the search's labels, the representative after each, the numbers that break the claim —
plus ``shown``, the same trace rendered for people (stable job and node names). The schema
(``trace.schema.json``) is checked on every read, so a hand-edited or foreign file fails with one
line naming the record and the field.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from proofs_check.core.model import A, S, StateModel
from proofs_check.core.search import Finding

FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("trace.schema.json")
Record = dict[str, Any]


class RecordError(ValueError):
    """The file or record is not what ``verify --json`` writes (one-line message, exit 2)."""


def envelope(kind: str, claim: str) -> Record:
    return {"format_version": FORMAT_VERSION, "kind": kind, "claim": claim}


def trace_record(claim: str, model_name: str, model: StateModel[S, A], finding: Finding[S, A],
                 shown: list[dict[str, Any]], **fields: Any) -> Record:
    """A ``trace`` record of ``finding`` (``fields``: variant, K, capacity, wcc_trajectory, …)."""
    return {**envelope("trace", claim), "model": model_name, "n_nodes": finding.size, **fields,
            "events": [model.action_to_json(a) for a in finding.actions],
            "states": [model.state_to_json(s) for s in finding.states],
            "numbers": finding.numbers, "failure": finding.failure, "shown": shown}


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def validate(record: Record, where: str = "record") -> None:
    """Raise RecordError naming the first schema violation of ``record``."""
    errors = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        field = "/".join(map(str, e.absolute_path)) or "(top level)"
        raise RecordError(f"{where}: field {field}: {e.message}")


def load_records(path: str, claim_known: Callable[[str], bool], max_bytes: int | None = None) -> list[Record]:
    """The counterexample / witness records of a ``verify --json`` report, each validated; a file
    of more than ``max_bytes`` bytes (when given) is refused before it is decoded."""
    p = Path(path)
    if not p.exists():  # a pipe (``<(cat r.json)``) is read too
        raise RecordError(f"{path}: no such file")
    if p.is_dir():
        raise RecordError(f"{path}: a directory, not a verify --json report")
    try:
        with p.open("rb") as fh:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise RecordError(f"{path}: more than {max_bytes} bytes (raise it with --limit bytes=N)")
        doc = json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not JSON (not UTF-8 text: byte {e.start})") from None
    except RecursionError:
        raise RecordError(f"{path}: not JSON that can be read (nested too deeply)") from None
    except OSError as e:
        raise RecordError(f"{path}: cannot read: {e.strerror or e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise RecordError(f"{path}: not a verify --json report (no 'results' list)")
    out = []
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict):
            raise RecordError(f"{path}: results[{i}]: not an object")
        stats = r.get("stats") or {}
        rec = r.get("counterexample") or (stats.get("witness") if isinstance(stats, dict) else None)
        if not rec:
            continue
        where = f"{path}: results[{i}] ({r.get('claim_id')})"
        if not isinstance(rec, dict):
            raise RecordError(f"{where}: the counterexample is not an object")
        validate(rec, where)
        if not claim_known(rec["claim"]):
            raise RecordError(f"{where}: field claim: unknown claim {rec['claim']!r}")
        out.append(rec)
    if not out:
        raise RecordError(f"{path}: no counterexample or witness to replay")
    return out
