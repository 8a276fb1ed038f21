"""The graph plugin's boot gates (docs/gates.md#the-gates): ``schema-labels``, and ``account-id-env`` (its logic
lives in :mod:`plughost.runtime.accounts`, shared with the channels plugin's account gate).

Gates read files and the environment only; they never open the store.
"""

from __future__ import annotations

import re
from pathlib import Path

from plughost import Gate, GateContext, GateResult
from plughost.api.accounts import account_id_env_gate
from plughost.api.store import VECTOR_LABELS

HERE = Path(__file__).resolve().parent
CYPHER_SCHEMA = HERE / "schema.cypher"
SQLITE_SCHEMA = HERE / "schema.sql"

_CYPHER_VECTOR = re.compile(
    r"CREATE\s+VECTOR\s+INDEX\s+\w+\s+(?:IF\s+NOT\s+EXISTS\s+)?FOR\s*\(\s*\w+\s*:\s*(\w+)\s*\)", re.I)
_SQL_INSERT = re.compile(r"INSERT\s+INTO\s+vector_labels\s*\([^)]*\)\s*VALUES\s*(.*?);", re.I | re.S)


def cypher_vector_labels(path: Path = CYPHER_SCHEMA) -> list[str]:
    """Labels that ``schema.cypher`` creates a vector index for."""
    text = "\n".join(line.split("//", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
    return _CYPHER_VECTOR.findall(text)


def sqlite_vector_labels(path: Path = SQLITE_SCHEMA) -> list[str]:
    """Labels the embedded schema (``schema.sql``) inserts into ``vector_labels``."""
    text = "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
    return [label for block in _SQL_INSERT.findall(text) for label in re.findall(r"\(\s*'([^']+)'\s*\)", block)]


def check_schema_labels(ctx: GateContext | None = None, *, sources: dict[str, list[str]] | None = None) -> GateResult:
    """The code's vector-indexed labels must equal each schema file's."""
    code = set(VECTOR_LABELS)
    if sources is None:
        sources = {CYPHER_SCHEMA.name: cypher_vector_labels(), SQLITE_SCHEMA.name: sqlite_vector_labels()}
    lines: list[str] = []
    defects = []
    inspected = 0
    for name, labels in sources.items():
        inspected += len(labels)
        found = set(labels)
        missing = sorted(code - found)
        extra = sorted(found - code)
        if missing or extra:
            defects.append({"source": name, "missing": missing, "extra": extra})
            lines.append(
                f"[graph-health] schema-labels FATAL source={name} "
                f"missing-in-schema=[{','.join(missing)}] not-in-code=[{','.join(extra)}]"
            )
    if defects:
        return GateResult("fail", inspected, lines, defects)
    return GateResult("ok", inspected, [f"startup-self-test schema-labels=ok inspected={inspected}"])


def gates() -> list[Gate]:
    return [
        account_id_env_gate(),
        Gate("schema-labels", check=check_schema_labels, fatal=True, order=20),
    ]
