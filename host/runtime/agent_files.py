"""A public agent's files: who it is, how it speaks, what it knows (docs/agents.md).

One locator, read the same way by the install, both agent runners, the memory plugin that assembles
KNOWLEDGE.md, the ``agent-files`` gate, ``doctor`` and the console, so the folder the gate vouches for
is the folder the runners read: ``<PLUGHOST_HOME>/accounts/<id>/agents/<slug>/`` with

- ``IDENTITY.md``: who the agent is; its front matter's ``keywords`` (with ``account.json``
  ``agents.<slug>.knowledgeKeywords``) are the public knowledge it subscribes to;
- ``SOUL.md``: how it speaks (optional);
- ``KNOWLEDGE.md``: what it may say. The part between :data:`BEGIN` and :data:`END` is assembled from
  the public documents its keywords match and rewritten whenever that knowledge changes; the rest
  is the owner's and is kept.

A brand ships starting copies beside its JSON file (``brands/<name>/agents/<slug>/``; a payload's
``brand/agents/<slug>/`` beside its ``brand.json``); ``plughost install`` copies a file into the
account only when the account has none, so the account's copy wins and an owner's edits are kept.
The account's public agent is ``account.json`` ``publicAgent`` (install sets it from the brand).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from plughost.runtime.accounts import account_dir, list_accounts, read_account_json
from plughost.util.errors import UserError
from plughost.util.log import format_line

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.types import Gate, GateContext, GateResult

IDENTITY = "IDENTITY.md"
SOUL = "SOUL.md"
KNOWLEDGE = "KNOWLEDGE.md"
FILES = (IDENTITY, SOUL, KNOWLEDGE)
REQUIRED = (IDENTITY, KNOWLEDGE)
"""Without these an agent is not reachable: no identity to speak as, nothing curated to say."""
PUBLIC_AGENT_KEY = "publicAgent"
BEGIN = "<!-- plughost:knowledge begin: assembled from the public knowledge this agent subscribes to; "\
        "edits between these lines are replaced -->"
END = "<!-- plughost:knowledge end -->"
NOT_ASSEMBLED = ("Nothing assembled yet: the memory plugin fills this part from the public documents this "
                 "agent's keywords match when the server starts and whenever one of them changes.")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)


def check_slug(slug: str, what: str = "agent") -> str:
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise UserError(f"{what}: '{slug}' is not an agent slug (lowercase letters, digits and '-', at most 64)")
    return slug


def agents_dir(home: Path, account: str) -> Path:
    return account_dir(account, home) / "agents"


def agent_dir(home: Path, account: str, slug: str) -> Path:
    """The one folder an agent's files are read from and written to."""
    return agents_dir(home, account) / check_slug(slug)


def brand_agents_dir(brand_file: Path) -> Path:
    """Where a brand file's agent files are: ``brands/bakery.json`` → ``brands/bakery/agents``,
    a payload's ``brand.json`` → ``brand/agents`` beside it."""
    return brand_file.with_suffix("") / "agents"


def brand_agent_files(brand_file: Path | None) -> dict[Path, Path]:
    """``<slug>/<FILE>`` → the brand's file, for every agent file the brand ships."""
    root = brand_agents_dir(brand_file) if brand_file is not None else None
    if root is None or not root.is_dir():
        return {}
    found: dict[Path, Path] = {}
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and _SLUG.match(folder.name):
            for name in FILES:
                if (folder / name).is_file():
                    found[Path(folder.name, name)] = folder / name
    return found


def brand_public_agent(brand_data: Mapping[str, Any], shipped: Iterable[Path]) -> str | None:
    """The brand's public agent: its ``publicAgent``, else the one agent it ships files for."""
    named = brand_data.get(PUBLIC_AGENT_KEY)
    if isinstance(named, str) and named:
        return named
    slugs = sorted({rel.parts[0] for rel in shipped})
    return slugs[0] if len(slugs) == 1 else None


def public_agent(home: Path, account: str) -> str | None:
    """The account's public agent (``account.json`` ``publicAgent``), or None when it names none."""
    path = account_dir(account, home) / "account.json"
    value = read_account_json(path, missing_ok=True).get(PUBLIC_AGENT_KEY)
    if value is None:
        return None
    return check_slug(value, f"{path}: {PUBLIC_AGENT_KEY}")


def agent_slugs(home: Path, account: str) -> list[str]:
    """The agents an account has: its public agent and every folder under ``agents/``."""
    slugs = set()
    named = public_agent(home, account)
    if named:
        slugs.add(named)
    root = agents_dir(home, account)
    if root.is_dir():
        slugs.update(p.name for p in root.iterdir() if p.is_dir() and _SLUG.match(p.name))
    return sorted(slugs)


# ---------------------------------------------------------------------------- reading
def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable: {exc}") from None


def front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a Markdown file; bad YAML is one line naming the file."""
    m = _FRONT.match(text)
    if m is None:
        return {}, text
    try:
        data = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: front matter: invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: front matter: expected key: value lines")
    return data, text[m.end():]


def _keyword_list(value: Any, field_name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{field_name}: expected a list of keywords")
    return [v.strip() for v in value if v.strip()]


def subscriptions(home: Path, account: str, slug: str) -> list[str]:
    """The keywords an agent subscribes to: IDENTITY.md's ``keywords``, then ``account.json``
    ``agents.<slug>.knowledgeKeywords``, each once (case does not matter)."""
    folder = agent_dir(home, account, slug)
    text = read_text(folder / IDENTITY)
    meta = front_matter(text, folder / IDENTITY)[0] if text is not None else {}
    words = _keyword_list(meta.get("keywords"), f"{folder / IDENTITY}: keywords")
    path = account_dir(account, home) / "account.json"
    agents = read_account_json(path, missing_ok=True).get("agents")
    entry = agents.get(slug) if isinstance(agents, dict) else None
    if isinstance(entry, dict):
        words += _keyword_list(entry.get("knowledgeKeywords"), f"{path}: agents.{slug}.knowledgeKeywords")
    out: list[str] = []
    for word in words:
        if word.casefold() not in {o.casefold() for o in out}:
            out.append(word)
    return out


def knowledge(home: Path, account: str, slug: str) -> str | None:
    """KNOWLEDGE.md as it is on disk (the owner's part and the assembled part), or None."""
    return read_text(agent_dir(home, account, slug) / KNOWLEDGE)


def system_prompt(home: Path, account: str, slug: str) -> str:
    """IDENTITY.md (without its front matter), SOUL.md and KNOWLEDGE.md, for a model's system prompt;
    empty when the agent has none of them."""
    folder = agent_dir(home, account, slug)
    parts = []
    for name in FILES:
        text = read_text(folder / name)
        if text is None:
            continue
        if name == IDENTITY:
            text = front_matter(text, folder / name)[1]
        text = text.replace(BEGIN, "").replace(END, "").strip()
        if text:
            parts.append(text)
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------- writing
def write_atomic(path: Path, text: str) -> bool:
    """Write ``text`` when it differs from the file's (temp file + rename); True when written."""
    if read_text(path) == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _span(text: str) -> tuple[int, int] | None:
    """Where the assembled part is in a KNOWLEDGE.md text, markers included."""
    start = text.find(BEGIN)
    end = text.find(END, start + len(BEGIN)) if start >= 0 else -1
    if end < 0:
        return None
    end += len(END)
    return start, end + 1 if text[end:end + 1] == "\n" else end


def merge_knowledge(existing: str | None, assembled: str) -> str:
    """KNOWLEDGE.md with its assembled part replaced by ``assembled`` and the owner's part kept
    (a file without the markers keeps all its text and gets the part at the end)."""
    block = f"{BEGIN}\n{assembled.strip()}\n{END}\n"
    if not existing or not existing.strip():
        return block
    span = _span(existing)
    if span is not None:
        return existing[:span[0]] + block + existing[span[1]:]
    return existing.rstrip("\n") + "\n\n" + block


def assembled_part(text: str | None) -> str:
    """The assembled part of a KNOWLEDGE.md text ('' when it has none)."""
    span = _span(text or "")
    return (text or "")[span[0] + len(BEGIN):span[1]].replace(END, "").strip() if span else ""


def write_knowledge(home: Path, account: str, slug: str, assembled: str) -> bool:
    """Replace the assembled part of the agent's KNOWLEDGE.md; True when the file changed."""
    path = agent_dir(home, account, slug) / KNOWLEDGE
    return write_atomic(path, merge_knowledge(read_text(path), assembled))


def write_file(home: Path, account: str, slug: str, name: str, text: str) -> bool:
    """An owner's edit of one of the agent's files (IDENTITY.md's front matter is checked first)."""
    if name not in FILES:
        raise UserError(f"file: '{name}' is not an agent file (one of {', '.join(FILES)})")
    path = agent_dir(home, account, slug) / name
    if name == IDENTITY:
        meta, _ = front_matter(text, path)
        _keyword_list(meta.get("keywords"), f"{path}: keywords")
    return write_atomic(path, text.replace("\r\n", "\n"))


# ---------------------------------------------------------------------------- reachability
@dataclass(frozen=True)
class Reach:
    """Whether an agent's files are where the runners read them."""

    account: str
    slug: str
    folder: Path
    missing: list[str] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        return not self.missing

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accountId": self.account, "agent": self.slug,
                               "reachable": "true" if self.reachable else "false"}
        if self.missing:
            out.update(reason="files-missing", file=",".join(self.missing), path=str(self.folder))
        return out


def reach(home: Path, account: str, slug: str) -> Reach:
    folder = agent_dir(home, account, slug)
    return Reach(account, slug, folder, [name for name in REQUIRED if not (folder / name).is_file()])


def audit(home: Path, accounts: Iterable[str] | None = None) -> list[Reach]:
    """Every agent of the accounts (default: all on disk), each with what it is missing."""
    found: list[Reach] = []
    for account in (list_accounts(home) if accounts is None else accounts):
        found += [reach(home, account, slug) for slug in agent_slugs(home, account)]
    return found


def check_agent_files(ctx: GateContext) -> GateResult:
    """`agent-files`: every agent of the inspected accounts has IDENTITY.md and KNOWLEDGE.md where the
    runners read them: `[agent-files] op=reach accountId=.. agent=.. reachable=true`, else
    `[agent-files] op=reach WARN accountId=.. agent=.. reachable=false reason=files-missing file=.. path=..`."""
    from plughost.runtime.accounts import selected_accounts
    from plughost.runtime.types import GateResult

    result = GateResult(status="ok")
    for account in selected_accounts(ctx):
        try:
            found = audit(ctx.host.home, [account])
        except UserError as exc:
            fields = {"accountId": account, "reason": "account-unreadable", "detail": str(exc)}
            result.defects.append(fields)
            result.lines.append(format_line("agent-files", "op=reach", "WARN", **fields))
            continue
        for r in found:
            result.inspected += 1
            if r.reachable:
                result.lines.append(format_line("agent-files", "op=reach", **r.fields()))
            else:
                result.defects.append(r.fields())
                result.lines.append(format_line("agent-files", "op=reach", "WARN", **r.fields()))
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(format_line(None, "startup-self-test", **{"agent-files": "ok"}, inspected=result.inspected))
    return result


def agent_files_gate() -> Gate:
    """The `agent-files` gate (not fatal: an agent without its files still answers from retrieval)."""
    from plughost.runtime.types import Gate

    return Gate("agent-files", check=check_agent_files, fatal=False, order=60)
