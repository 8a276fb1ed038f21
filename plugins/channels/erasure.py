"""An erased person removed from what the channels plugin keeps outside the store (the
``plughost_person_erased`` hook, docs/cli.md#erase-and-export): the phone alias cache, the schedule's
entries to or about them, and their agent sessions (the session record and Claude Code's
transcript files of those sessions, which hold the conversation's text)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from plughost import Host
from plughost.api.payload import config_dir_source
from plughost.plugins.channels import scheduler
from plughost.plugins.channels.identity import account_dir
from plughost.plugins.channels.runner import agent_sessions_of
from plughost.plugins.channels.wire import JSON, JSONObject

SENDER_CHANNELS = ("webchat", "telegram", "whatsapp")  # a --visitor id names no channel: try each


def _write_json(path: Path, data: JSON) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True, ensure_ascii=False)
    os.replace(tmp, path)


def _read_json(path: Path) -> JSON:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def aliases(home: Path, account: str, senders: set[str], holds: Callable[[str], bool], dry_run: bool) -> int:
    path = account_dir(home, account) / "channels" / "aliases.json"
    data = _read_json(path)
    if not isinstance(data, dict):
        return 0
    gone = [k for k, v in data.items() if str(k).split(":", 1)[-1] in senders or holds(str(v)) or holds(str(k))]
    if gone and not dry_run:
        _write_json(path, {k: v for k, v in data.items() if k not in gone})
    return len(gone)


def schedule(home: Path, account: str, senders: set[str], holds: Callable[[str], bool], dry_run: bool) -> int:
    path = scheduler.schedule_path(home, account)
    if not path.exists():
        return 0

    def theirs(entry: JSONObject) -> bool:
        return str(entry.get("to") or "") in senders or str(entry.get("chatId") or "") in senders or \
            holds(json.dumps(entry, ensure_ascii=False))

    if dry_run:
        return sum(theirs(e) for e in scheduler.read_entries(path))

    def drop(entries: list[JSONObject]) -> int:
        keep = [e for e in entries if not theirs(e)]
        gone = len(entries) - len(keep)
        entries[:] = keep
        return gone

    return int(scheduler.update(path, drop))


def sessions(home: Path, account: str, config_dir: Path | None, senders: set[str],
             dry_run: bool) -> tuple[int, int]:
    """(session records, transcript files) of the senders' agent sessions."""
    ids = {sid for sender in senders for channel in SENDER_CHANNELS
           for sid in agent_sessions_of(account, f"{channel}:{sender}")}
    record = home / "accounts" / account / "claude-sessions.json"
    data = _read_json(record)
    gone = [k for k in data if k in ids] if isinstance(data, dict) else []
    if gone and not dry_run:
        _write_json(record, {k: v for k, v in data.items() if k not in gone})
    files = []
    projects = config_dir / "projects" if config_dir is not None else None
    if projects is not None and projects.is_dir():
        files = [p for p in projects.glob("*/*.jsonl") if p.stem in ids]
        for folder in projects.glob("*/"):  # a session's side folder (subagent transcripts)
            files += [p for p in folder.iterdir() if p.is_dir() and p.name in ids]
    if not dry_run:
        for p in files:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    return len(gone), len(files)


def erase(host: Host, account: str, senders: list[str], holds: Callable[[str], bool], dry_run: bool,
          tally: Counter[str]) -> None:
    who = {s for s in senders if s}
    tally["aliases"] += aliases(host.home, account, who, holds, dry_run)
    tally["scheduled"] += schedule(host.home, account, who, holds, dry_run)
    folder, _source = config_dir_source(host.env)  # the one the runner gave Claude Code; the ids are ours alone
    records, files = sessions(host.home, account, folder, who, dry_run)
    tally["sessions"] += records
    tally["transcripts"] += files
    if not dry_run:  # this process's webchat cache (a server's other processes check theirs on the next read)
        from plughost.plugins.channels.webchat import forget

        dropped = forget(host, who)
        if dropped:
            tally["webchat-cache"] += dropped
