"""`plughost doctor`'s hook report: the hooks each installed plugin registers, and the hook command
files that are not there.

Claude Code reads a plugin's ``hooks/hooks.json`` (or the file its ``plugin.json`` ``hooks`` names)
and runs each ``command`` with ``${CLAUDE_PLUGIN_ROOT}`` set to the plugin's folder; a command file
that is gone fails every time the event fires, silently for the user, so doctor names it. A word
of the command that mentions ``${CLAUDE_PLUGIN_ROOT}`` (or is an absolute path) is the file checked.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from host.launch import installed_roots
from host.log import format_line

ROOT_VAR = ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT")


def hooks_file(root: Path) -> Path:
    try:
        doc = json.loads((root / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    named = doc.get("hooks") if isinstance(doc, dict) else None
    return root / named if isinstance(named, str) else root / "hooks" / "hooks.json"


def command_files(command: str, root: Path) -> list[Path]:
    """The files a hook command runs (words naming the plugin root, or absolute paths)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    files = []
    for word in words:
        if any(v in word for v in ROOT_VAR):
            for v in ROOT_VAR:
                word = word.replace(v, str(root))
            files.append(Path(word))
        elif word.startswith("/") and word not in ("/bin/sh", "/bin/bash", "/usr/bin/env"):
            files.append(Path(word))
    return files


def plugin_hooks(key: str, root: Path) -> tuple[str, list[str]]:
    """One ``[doctor] hooks`` line for the plugin, and its findings (a problem line each)."""
    path = hooks_file(root)
    if not path.is_file():
        return format_line("doctor", "hooks", plugin=key, events="none"), []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        events: dict[str, Any] = doc["hooks"]
        assert isinstance(events, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        return (format_line("doctor", "hooks", plugin=key, events="unreadable"),
                [f"plugin={key} reason=hooks-unreadable path={path}"])
    counts, commands, problems = [], [], []
    for event, groups in events.items():
        n = 0
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if not isinstance(command, str):
                    continue
                n += 1
                for file in command_files(command, root):
                    shown = str(file.relative_to(root)) if file.is_relative_to(root) else str(file)
                    if shown not in commands:
                        commands.append(shown)
                    if not file.is_file():
                        problems.append(f"plugin={key} reason=hook-command-missing event={event} path={file}")
        counts.append(f"{event}:{n}")
    line = format_line("doctor", "hooks", plugin=key, events=",".join(counts) or "none",
                       commands=",".join(commands) or "-")
    return line, problems


def report(config_dir: Path) -> tuple[list[str], list[str]]:
    """Hook lines (one per installed plugin) and the findings among them."""
    lines, problems = [], []
    for key, root in installed_roots(config_dir):
        line, found = plugin_hooks(key, root)
        lines.append(line)
        problems.extend(found)
    return lines, problems
