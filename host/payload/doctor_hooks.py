"""`plughost doctor`'s hook report: the hooks each installed plugin registers, the hook command
files that are not there, and every hook command run once as Claude Code would run it.

Claude Code reads a plugin's ``hooks/hooks.json`` (or the file its ``plugin.json`` ``hooks`` names)
and runs each ``command`` with ``${CLAUDE_PLUGIN_ROOT}`` set to the plugin's folder; a command file
that is gone fails every time the event fires, silently for the user, so doctor names it. What
Claude Code refuses in that file (an unknown event, a wrong shape) fails the whole plugin's load:
doctor names it with the one check ``manifests check`` and the gates make
(:func:`plughost.payload.plugin_files.check_hooks`). A word
of the command that mentions ``${CLAUDE_PLUGIN_ROOT}`` (or is an absolute path) is the file checked.

A file that is there can still fail: an interpreter that cannot import ``host`` fails every hook
while the servers connect. So each command is run (``sh -c``, as Claude Code does) with a sample
input of its event in Claude Code's hook environment: ``PATH=/usr/bin:/bin``, ``HOME``,
``CLAUDE_CONFIG_DIR``, ``CLAUDE_PLUGIN_ROOT``, ``CLAUDE_PROJECT_DIR`` (a scratch folder) and the
config dir's ``settings.json`` ``env``, nothing else. The probe is a visitor's turn (a public
session, a one-word prompt, no transcript), so it reads the install but records nothing. A
non-zero exit, a Python traceback or a timeout is a finding naming the plugin, event and command.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plughost.payload.launch import claude_env, installed_roots
from plughost.payload.plugin_files import check_hooks, errors, hook_command_files
from plughost.ports.principal import child_env, resolve
from plughost.util.log import format_line

PROBE_SESSION = "plughost-doctor-probe"
FAILURE_MARKS = ("Traceback (most recent call last)", "ModuleNotFoundError", "ImportError")


def hooks_file(root: Path) -> Path:
    try:
        doc = json.loads((root / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    named = doc.get("hooks") if isinstance(doc, dict) else None
    return root / named if isinstance(named, str) else root / "hooks" / "hooks.json"


def plugin_hooks(key: str, root: Path, run: Any = None) -> tuple[str, list[str]]:
    """One ``[doctor] hooks`` line for the plugin, and its findings (a problem line each);
    ``run(event, command)`` (a finding line or None) is called for every command whose files exist."""
    path = hooks_file(root)
    if not path.is_file():
        return format_line("doctor", "hooks", plugin=key, events="none"), []
    # the check ``manifests check`` and the gates make: what Claude Code refuses fails the plugin's load
    invalid = [format_line(None, plugin=key, reason="hooks-invalid", file=str(f.file), field=f.field,
                           detail=f.detail) for f in errors(check_hooks(path, root, key))]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        events: dict[str, Any] = doc["hooks"]
        assert isinstance(events, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        return format_line("doctor", "hooks", plugin=key, events="unreadable"), invalid
    if invalid:
        run = None  # Claude Code does not load the plugin: none of its hooks runs
    counts, commands, problems = [], [], list(invalid)
    for event, groups in events.items():
        n = 0
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if not isinstance(command, str):
                    continue
                n += 1
                missing = False
                for file in hook_command_files(command, root):
                    shown = str(file.relative_to(root)) if file.is_relative_to(root) else str(file)
                    if shown not in commands:
                        commands.append(shown)
                    if not file.is_file():
                        missing = True
                        problems.append(f"plugin={key} reason=hook-command-missing event={event} path={file}")
                failed = None if missing or run is None else run(event, command)
                if failed:
                    problems.append(failed)
        counts.append(f"{event}:{n}")
    line = format_line("doctor", "hooks", plugin=key, events=",".join(counts) or "none",
                       commands=",".join(commands) or "-")
    return line, problems


def sample_input(event: str, project: Path) -> dict[str, Any]:
    """A minimal hook input of ``event`` in the shape Claude Code sends (no transcript on disk)."""
    base: dict[str, Any] = {"session_id": PROBE_SESSION, "transcript_path": str(project / "no-transcript.jsonl"),
                            "cwd": str(project), "hook_event_name": event}
    samples: dict[str, dict[str, Any]] = {
        "UserPromptSubmit": {"prompt": "hi"},
        "Stop": {"stop_hook_active": False},
        "SubagentStop": {"stop_hook_active": False},
        "PreToolUse": {"tool_name": "Read", "tool_input": {"file_path": str(project / "x")}},
        "PostToolUse": {"tool_name": "Read", "tool_input": {"file_path": str(project / "x")},
                        "tool_response": {"content": ""}},
        "PostToolUseFailure": {"tool_name": "Read", "tool_input": {"file_path": str(project / "x")},
                               "error": "not found"},
        "PreCompact": {"trigger": "manual", "custom_instructions": ""},
        "SessionStart": {"source": "compact"},
        "SessionEnd": {"reason": "other"},
        "Notification": {"message": "doctor"},
    }
    extra = samples.get(event, {})
    return {**base, **extra}


def hook_env(config_dir: Path, root: Path, project: Path, home: str | None) -> dict[str, str]:
    """Claude Code's environment for a hook of the plugin at ``root``, as a visitor's turn."""
    base = {**claude_env(config_dir, home), "CLAUDE_PLUGIN_ROOT": str(root), "CLAUDE_PROJECT_DIR": str(project)}
    return child_env(base, resolve(base).for_turn("public", PROBE_SESSION))


def run_command(key: str, event: str, command: str, env: Mapping[str, str], project: Path,
                timeout: float) -> str | None:
    """Run one hook command with its event's sample input; a finding line, or None when it is fine."""
    stdin = json.dumps(sample_input(event, project))
    fields: dict[str, Any] = {"plugin": key, "reason": "hook-failed", "event": event, "command": command}
    try:
        done = subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True,
                              env=dict(env), cwd=str(project), timeout=timeout)
    except subprocess.TimeoutExpired:
        return format_line(None, **fields, detail=f"no exit within {timeout:.0f}s")
    except OSError as exc:
        return format_line(None, **fields, detail=str(exc))
    err = done.stderr or ""
    if done.returncode == 0 and not any(mark in err for mark in FAILURE_MARKS):
        return None
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    marked = [line for line in lines if line.startswith(("ModuleNotFoundError", "ImportError"))]
    return format_line(None, **fields, exit=done.returncode, stderr=(marked or lines or [""])[-1][:200])


def report(config_dir: Path, *, home: str | None = None, run: bool = True,
           timeout: float = 30.0) -> tuple[list[str], list[str]]:
    """Hook lines (one per installed plugin) and the findings among them; ``run`` also runs
    every hook command once (see the module docstring)."""
    lines, problems = [], []
    with tempfile.TemporaryDirectory(prefix="plughost-doctor-hooks-") as scratch:
        project = Path(scratch)
        for key, root in installed_roots(config_dir):
            env = hook_env(config_dir, root, project, home)
            runner = (lambda event, command, _k=key, _e=env: run_command(_k, event, command, _e, project, timeout)
                      ) if run else None
            line, found = plugin_hooks(key, root, runner)
            lines.append(line)
            problems.extend(found)
    return lines, problems
