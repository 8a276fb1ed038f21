"""The console's "What the public agent knows" page (docs/console.md#agents): each agent of the
account with whether its files are where the runners read them, its keywords, its files to read and
edit, and "Assemble again". Files are read and written through the one locator (``plughost.api.agents``);
the assembling is the memory plugin's, asked through ``plughost_knowledge_changed``."""

from __future__ import annotations

import time
from typing import Any

from plughost import Host, UserError, log
from plughost.api import agents, hooks

MAX_FILE = 128 * 1024
"""An agent file's size as the edit form takes it (the form's own limit is this and a little)."""
FILE_WORDS = {
    agents.IDENTITY: "Who the agent is and what it may say. The `keywords:` line at the top names the public "
                     "knowledge it subscribes to: documents that mention or are tagged with one are assembled "
                     "into KNOWLEDGE.md.",
    agents.SOUL: "How the agent speaks: tone, length, language.",
    agents.KNOWLEDGE: "What the agent may say. The part between the two marker lines is assembled from your public "
                      "documents and replaced whenever they change; write your own notes above or below it, "
                      "they are kept.",
}


def overview(host: Host, account: str) -> list[dict[str, Any]]:
    """One row per agent: slug, public or not, reachable, what is missing, keywords, when KNOWLEDGE.md changed."""
    rows = []
    public = agents.public_agent(host.home, account)
    for slug in agents.agent_slugs(host.home, account):
        found = agents.reach(host.home, account, slug)
        try:
            keywords = agents.subscriptions(host.home, account, slug)
            problem = ""
        except UserError as exc:
            keywords, problem = [], str(exc)
        path = found.folder / agents.KNOWLEDGE
        changed = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(path.stat().st_mtime)) if path.is_file() else ""
        rows.append({"slug": slug, "public": slug == public, "reachable": found.reachable,
                     "missing": found.missing, "keywords": keywords, "problem": problem, "changed": changed})
    return rows


def detail(host: Host, account: str, slug: str) -> dict[str, Any] | None:
    """An agent's files and state, or None when the account has no such agent."""
    if slug not in agents.agent_slugs(host.home, account):
        return None
    row = next(r for r in overview(host, account) if r["slug"] == slug)
    folder = agents.agent_dir(host.home, account, slug)
    files = [{"name": name, "text": agents.read_text(folder / name) or "", "exists": (folder / name).is_file(),
              "words": FILE_WORDS[name], "id": name.split(".")[0].lower()} for name in agents.FILES]
    return {**row, "files": files, "folder": str(folder)}


def save(host: Host, account: str, slug: str, name: str, text: str) -> bool:
    """The owner's edit of one file; then the agent's knowledge is assembled again (its keywords may
    have changed). True when the file changed. Bad input (a file name, the front matter) is a UserError."""
    if len(text.encode("utf-8")) > MAX_FILE:
        raise UserError(f"{name}: longer than {MAX_FILE // 1024} KiB; shorten it")
    changed = agents.write_file(host.home, account, slug, name, text)
    log("console", "op=agent-file-saved", agent=slug, file=name, changed="true" if changed else "false")
    rebuild(host, account, slug)
    return changed


def rebuild(host: Host, account: str, slug: str) -> list[str]:
    """Ask the plugin that assembles KNOWLEDGE.md to do it now; the plugins that failed, by name."""
    errors = host.call_each(hooks.KNOWLEDGE_CHANGED, account_id=account, agents=[slug], reason="console")
    return [str(getattr(e, "plugin", e)) for e in errors]
