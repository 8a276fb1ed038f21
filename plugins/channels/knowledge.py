"""The public agent's curated knowledge as the runners read it (docs/agents.md#runners): its files
through the one locator, KNOWLEDGE.md cut into passages for the memory runner, all three files for
the claude runner's system prompt. A file is read again only when it changes (its mtime and size)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from plughost import UserError, log
from plughost.api import agents

MAX_PROMPT_BYTES = 100_000
"""The files' share of the claude runner's ``--append-system-prompt``: one argv string stays under
the kernel's 128 KiB limit per argument."""


@dataclass(frozen=True)
class Piece:
    """One paragraph of KNOWLEDGE.md with the document (``## ``) and section (``### ``) it sits under."""

    title: str
    heading: str
    text: str

    @property
    def source(self) -> str:
        return " › ".join(p for p in (self.title, self.heading) if p) or agents.KNOWLEDGE


def pieces(text: str) -> list[Piece]:
    """KNOWLEDGE.md's paragraphs, the markers, headings and ``Source:`` lines left out."""
    out: list[Piece] = []
    title = heading = ""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines: list[str] = []
        for line in block.strip().splitlines():
            if line.startswith("<!-- plughost:knowledge"):
                continue
            if line.startswith("## "):
                title, heading = line[3:].strip(), ""
            elif line.startswith("### "):
                heading = line[4:].strip()
            elif line.startswith("# "):
                title, heading = "", ""
            elif not (line.startswith("Source: ") and not lines):
                lines.append(line)
        body = "\n".join(lines).strip()
        if body:
            out.append(Piece(title, heading, body))
    return out


class AgentFiles:
    """One account's public agent's files, re-read when they change."""

    def __init__(self, home: Path, account: str | None) -> None:
        self.home, self.account = home, account
        self.lock = threading.Lock()
        self.seen: dict[Path, tuple[tuple[int, int] | None, str | None]] = {}

    def slug(self) -> str | None:
        if not self.account:
            return None
        try:
            return agents.public_agent(self.home, self.account)
        except UserError as exc:  # a bad account.json: the gates say so; the runner answers from retrieval
            log("channels", "op=agent-files", "WARN", reason="unreadable", detail=str(exc))
            return None

    def read(self, name: str) -> str | None:
        """The public agent's file ``name`` (None when there is no agent or no file)."""
        slug = self.slug()
        if slug is None or self.account is None:
            return None
        path = agents.agent_dir(self.home, self.account, slug) / name
        try:
            st = path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        with self.lock:
            known = self.seen.get(path)
            if known is not None and known[0] == stamp:
                return known[1]
        text = agents.read_text(path) if stamp is not None else None
        with self.lock:
            self.seen[path] = (stamp, text)
        return text

    def knowledge(self) -> list[Piece]:
        text = self.read(agents.KNOWLEDGE)
        return pieces(text) if text else []

    def prompt(self) -> str:
        """IDENTITY.md (without front matter), SOUL.md and KNOWLEDGE.md, for a system prompt ('' when none)."""
        slug = self.slug()
        if slug is None or self.account is None:
            return ""
        try:
            text = agents.system_prompt(self.home, self.account, slug)
        except UserError as exc:
            log("channels", "op=agent-files", "WARN", agent=slug, reason="unreadable", detail=str(exc))
            return ""
        raw = text.encode("utf-8")
        if len(raw) > MAX_PROMPT_BYTES:
            log("channels", "op=agent-files", "WARN", agent=slug, reason="prompt-too-long", bytes=len(raw),
                kept=MAX_PROMPT_BYTES)
            text = raw[:MAX_PROMPT_BYTES].decode("utf-8", "ignore")
        return text
