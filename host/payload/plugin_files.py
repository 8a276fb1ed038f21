"""The Claude Code files of a plugin or marketplace folder, checked as the pinned Claude Code CLI checks them
(docs/payload.md#what-claude-code-accepts): one home for ``manifests check``, ``bundle``, ``install`` and the
boot gate ``plugin-files``.

Measured against ``claude plugin validate --strict`` (the version in ``scripts/tools-package.json``);
the test ``tests/host/manifests/test_cli_agreement.py`` runs every broken shape through both:

- ``.claude-plugin/plugin.json``: valid JSON; the fields the CLI knows, each of its type; a kebab-case
  ``name``; every path it names (``skills``, ``agents``, ``hooks``, ``commands``) exists;
- ``hooks/hooks.json`` (or the file ``plugin.json`` names): valid JSON, ``{"hooks": {Event: [{matcher?,
  hooks: [{type, command, timeout?}]}]}}``, every event one Claude Code knows (an unknown one, or
  invalid JSON, and Claude Code fails to load the whole plugin);
- every ``SKILL.md`` and agent ``.md``: a YAML frontmatter block that parses, with a ``description``;
- ``.claude-plugin/marketplace.json``: valid JSON, kebab-case ``name``, an ``owner``, at least one plugin.

Each finding names the plugin, the file and the field. ``error`` is what the CLI refuses (the plugin
does not load); ``warn`` is what the CLI accepts but breaks at run time: a hook command file that is
not there (the hook fails every time its event fires).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from plughost.runtime.manifest import _FRONTMATTER, describe_error, json_path, load_yaml, schema_errors
from plughost.util.log import format_line

HOOK_EVENTS = frozenset({
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PermissionRequest", "PermissionDenied", "Setup", "TeammateIdle", "TaskCreated",
    "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange", "WorktreeCreate", "WorktreeRemove",
    "InstructionsLoaded", "CwdChanged", "FileChanged", "MessageDisplay",
})
"""The hook events of the pinned CLI (2.1.197); any other key of ``hooks`` fails the plugin's load."""

HOOK_TYPES = {"command": ("command",), "prompt": ("prompt",), "agent": ("prompt",), "http": ("url",),
              "mcp_tool": ("server", "tool")}
"""Hook ``type`` → the string fields that type requires."""

PLUGIN_JSON = Path(".claude-plugin", "plugin.json")
MARKETPLACE_JSON = Path(".claude-plugin", "marketplace.json")
ROOT_VARS = ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT")


@dataclass(frozen=True)
class Finding:
    plugin: str
    file: Path
    field: str
    detail: str
    severity: str = "error"  # error: Claude Code refuses it | warn: accepted, broken at run time

    def line(self) -> str:
        """``manifests check`` form: ``<file>: <field>: <detail> (plugin <name>)``."""
        word = "" if self.severity == "error" else "warning: "
        return f"{self.file}: {self.field}: {word}{self.detail} (plugin {self.plugin})"

    def fields(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "file": str(self.file), "field": self.field, "detail": self.detail,
                "severity": self.severity}

    def log_line(self, tag: str, level: str) -> str:
        return format_line(tag, "op=invalid-file", level, plugin=self.plugin, file=str(self.file), field=self.field,
                           detail=self.detail)


def _read_json(path: Path, plugin: str, out: list[Finding]) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.append(Finding(plugin, path, "(file)", f"cannot read: {exc}"))
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        out.append(Finding(plugin, path, "json", f"invalid JSON: {exc}"))
        return None


def _schema(data: Any, schema: str, path: Path, plugin: str, out: list[Finding]) -> None:
    for err in schema_errors(data, schema):
        where, what = describe_error(err)
        if err.validator == "minItems" and json_path(err.absolute_path) == "plugins":
            what = "the marketplace has no plugins defined"
        out.append(Finding(plugin, path, where or "(top level)", what))


def _frontmatter(path: Path, plugin: str, kind: str, out: list[Finding]) -> None:
    """A SKILL.md or agent file: a YAML frontmatter block that parses to a mapping with a description."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.append(Finding(plugin, path, "(file)", f"cannot read {kind}: {exc}"))
        return
    match = _FRONTMATTER.match(text)
    if not match:
        out.append(Finding(plugin, path, "frontmatter",
                           f"no YAML frontmatter block between '---' lines at the top of the {kind}"))
        return
    try:
        data = _parsed(match.group(1))
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        out.append(Finding(plugin, path, "frontmatter", f"invalid YAML: {problem}"))
        return
    if not isinstance(data, dict):
        out.append(Finding(plugin, path, "frontmatter", "expected a mapping of fields"))
        return
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        out.append(Finding(plugin, path, "description", f"required: the {kind}'s frontmatter has no description"))


def _parsed(text: str) -> Any:
    """The frontmatter through libyaml; a text it refuses goes to the pure-Python parser, whose
    message (``problem``) is the one this check has always printed."""
    try:
        return load_yaml(text)
    except yaml.YAMLError:
        return yaml.safe_load(text)


def _inside(folder: Path, rel: str) -> Path:
    return (folder / rel).resolve() if not Path(rel).is_absolute() else Path(rel)


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def skill_files(folder: Path, doc: dict[str, Any]) -> list[Path]:
    """Every SKILL.md Claude Code loads: a listed folder holding SKILL.md is one skill, else each subfolder."""
    roots = [folder / "skills", *(_inside(folder, p) for p in _as_list(doc.get("skills")))]
    out: list[Path] = []
    for root in dict.fromkeys(roots):
        if (root / "SKILL.md").is_file():
            out.append(root / "SKILL.md")
        elif root.is_dir():
            out.extend(sorted(p / "SKILL.md" for p in root.iterdir() if (p / "SKILL.md").is_file()))
    return list(dict.fromkeys(out))


def agent_files(folder: Path, doc: dict[str, Any]) -> list[Path]:
    out = sorted((folder / "agents").glob("*.md")) if (folder / "agents").is_dir() else []
    for rel in _as_list(doc.get("agents")):
        path = _inside(folder, rel)
        out.extend(sorted(path.glob("*.md")) if path.is_dir() else [path] if path.is_file() else [])
    return list(dict.fromkeys(out))


def hooks_files(folder: Path, doc: dict[str, Any]) -> list[Path]:
    out = [folder / "hooks" / "hooks.json"] if (folder / "hooks" / "hooks.json").is_file() else []
    for rel in _as_list(doc.get("hooks")):
        path = _inside(folder, rel)
        if path.is_file():
            out.append(path)
    return list(dict.fromkeys(out))


SHELLS = frozenset({"/bin/sh", "/bin/bash", "/usr/bin/env"})


def hook_command_files(command: str, folder: Path) -> list[Path]:
    """The files a hook command runs: words naming the plugin root (expanded to ``folder``), and
    absolute paths other than a shell. The one reading of it, for these checks and ``doctor``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    files = []
    for word in words:
        if any(v in word for v in ROOT_VARS):
            for v in ROOT_VARS:
                word = word.replace(v, str(folder))
            files.append(Path(word))
        elif word.startswith("/") and word not in SHELLS:
            files.append(Path(word))
    return files


def check_hooks(path: Path, folder: Path, plugin: str) -> list[Finding]:
    out: list[Finding] = []
    doc = _read_json(path, plugin, out)
    if out:
        return out
    events = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(events, dict):
        return [Finding(plugin, path, "hooks", "expected an object of hook events ({\"hooks\": {Event: [...]}})")]
    for event, groups in events.items():
        where = f"hooks.{event}"
        if event not in HOOK_EVENTS:
            out.append(Finding(plugin, path, where, "not a Claude Code hook event (check spelling and capitalization)"))
            continue
        if not isinstance(groups, list):
            out.append(Finding(plugin, path, where, f"expected an array (got {type(groups).__name__})"))
            continue
        for i, group in enumerate(groups):
            at = f"{where}[{i}]"
            if not isinstance(group, dict):
                out.append(Finding(plugin, path, at, "expected an object"))
                continue
            if "matcher" in group and not isinstance(group["matcher"], str):
                out.append(Finding(plugin, path, f"{at}.matcher", "expected a string"))
            hooks = group.get("hooks")
            if not isinstance(hooks, list):
                out.append(Finding(plugin, path, f"{at}.hooks", "expected an array of hooks"))
                continue
            for j, hook in enumerate(hooks):
                hat = f"{at}.hooks[{j}]"
                if not isinstance(hook, dict):
                    out.append(Finding(plugin, path, hat, "expected an object"))
                    continue
                kind = hook.get("type")
                if kind not in HOOK_TYPES:
                    out.append(Finding(plugin, path, f"{hat}.type", f"expected one of {', '.join(HOOK_TYPES)}"))
                    continue
                for name in HOOK_TYPES[kind]:
                    if not isinstance(hook.get(name), str):
                        out.append(Finding(plugin, path, f"{hat}.{name}", "expected a string"))
                if "timeout" in hook and (isinstance(hook["timeout"], bool)
                                          or not isinstance(hook["timeout"], int | float)):
                    out.append(Finding(plugin, path, f"{hat}.timeout", "expected a number"))
                if kind == "command" and isinstance(hook.get("command"), str):
                    for file in hook_command_files(hook["command"], folder):
                        if not file.exists():
                            out.append(Finding(plugin, path, f"{hat}.command",
                                               f"runs {file}, which does not exist (the hook fails each time "
                                               f"{event} fires)", "warn"))
    return out


def check_plugin(folder: Path, plugin: str | None = None, *, generated: bool = True) -> list[Finding]:
    """Every finding of one plugin folder. ``generated``: its ``.claude-plugin/plugin.json`` should be
    there (a source folder before ``manifests generate`` has none; its other files are still checked)."""
    folder = Path(folder)
    name = plugin or folder.name
    out: list[Finding] = []
    doc: dict[str, Any] = {}
    pj = folder / PLUGIN_JSON
    if pj.is_file():
        data = _read_json(pj, name, out)
        if isinstance(data, dict):
            doc = data
            _schema(data, "claude-plugin", pj, name, out)
            for key in ("skills", "agents", "hooks", "commands", "outputStyles"):
                for i, rel in enumerate(_as_list(data.get(key))):
                    if ".." in Path(rel).parts:
                        out.append(Finding(name, pj, key, f"path {rel!r} leaves the plugin folder"))
                    elif not _inside(folder, rel).exists():
                        at = key if isinstance(data.get(key), str) else f"{key}[{i}]"
                        out.append(Finding(name, pj, at, f"path not found: {rel} (Claude Code fails to load "
                                                         "the plugin)"))
        elif data is not None:
            out.append(Finding(name, pj, "(top level)", "expected an object"))
    elif generated:
        out.append(Finding(name, pj, "(file)", "missing: run plughost manifests generate (or bundle)"))
    for skill in skill_files(folder, doc):
        _frontmatter(skill, name, "skill", out)
    for agent in agent_files(folder, doc):
        _frontmatter(agent, name, "agent", out)
    for hooks in hooks_files(folder, doc):
        out.extend(check_hooks(hooks, folder, name))
    return out


def check_marketplace(folder: Path) -> list[Finding]:
    path = Path(folder) / MARKETPLACE_JSON
    if not path.is_file():
        return []
    out: list[Finding] = []
    data = _read_json(path, "-", out)
    name = str(data.get("name") or "-") if isinstance(data, dict) else "-"
    if data is not None:
        _schema(data, "claude-marketplace", path, name, out)
    return [Finding(name, f.file, f.field, f.detail, f.severity) for f in out]


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]
