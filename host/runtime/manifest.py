"""PLUGIN.md: YAML frontmatter validated against `host/manifests/schemas/plugin.schema.json` (docs/architecture.md#plugin-folders).

Errors are one line naming the file, the field and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import yaml

from plughost.runtime.hostrange import FIELD as HOST_RANGE
from plughost.runtime.hostrange import check_specifier
from plughost.util import config
from plughost.util.errors import UserError

_LOADER: Any = None
CAPABILITY = re.compile(r"^[a-z][a-z0-9-]*$")
"""A capability's name in ``provides``/``needs`` (plugin.schema.json's pattern)."""
CODE_FIELDS = {"provides": "PROVIDES", "needs": "NEEDS"}
"""The module (or object) attributes that say ``provides``/``needs`` for a plugin without PLUGIN.md."""
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass(frozen=True)
class ToolDecl:
    """A tool as PLUGIN.md declares it."""

    name: str
    description: str = ""
    admin_allowlist: bool = False
    eager: bool = False
    input_schema: dict[str, Any] | None = None


@dataclass
class PluginManifest:
    """A parsed, validated PLUGIN.md (or one synthesised for an entry point without one)."""

    name: str
    path: Path | None
    description: str = ""
    version: str = "0.0.0"
    surface: str = "feature"
    author: str | None = None
    tools: list[ToolDecl] = field(default_factory=list)
    mcp: dict[str, Any] | None = None
    mcp_manifest: str = "auto"
    python: str | None = None
    skills: str = "skills"
    agents: str = "agents"
    hooks: str = "hooks"
    requires_plughost: str | None = None  # a PEP 440 specifier of the host versions it works with
    provides: tuple[str, ...] = ()  # capabilities it provides (docs/architecture.md#needs-and-provides)
    needs: tuple[str, ...] = ()  # capabilities a loaded plugin must provide
    body: str = ""

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path else None


@cache
def _validator(name: str) -> Any:
    import jsonschema

    schema = json.loads(config.schema_path(name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def json_path(parts: Any) -> str:
    """`tools[0].name` style path for a jsonschema error location."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe_error(err: Any) -> tuple[str, str]:
    """(field, expectation) for a jsonschema ValidationError, phrased for humans."""
    where = json_path(err.absolute_path)
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        key = extra[0] if extra else "?"
        return (f"{where}.{key}" if where else key), "unknown key; allowed: " + ", ".join(
            sorted(err.schema.get("properties", {}))
        )
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return (f"{where}.{missing}" if where else missing), "required field is missing"
    if err.validator == "pattern":
        return where, f"expected a value matching {err.validator_value} (got {err.instance!r})"
    if err.validator == "type":
        return where, f"expected {err.validator_value} (got {type(err.instance).__name__} {err.instance!r})"
    if err.validator == "enum":
        return where, f"expected one of {', '.join(map(str, err.validator_value))} (got {err.instance!r})"
    return where, err.message


@cache
def _fast(name: str) -> Any:
    """A compiled validator (fastjsonschema) used to accept valid input quickly; jsonschema explains failures."""
    text = config.schema_path(name).read_text(encoding="utf-8")
    schema = {k: v for k, v in json.loads(text).items() if k != "$schema"}  # compiled as draft-07: same keywords
    return _cached_validator(name, text, schema) or fastjsonschema.compile(schema)


def _cached_validator(name: str, text: str, schema: dict[str, Any]) -> Any:
    """The compiled validator from the user's cache (``$XDG_CACHE_HOME/plughost/validators``, the
    generated module's bytecode, keyed by the schema, fastjsonschema's and Python's versions), written
    there the first time: each boot otherwise generates and compiles the same code again. None when
    the cache cannot be used (then the caller compiles in memory)."""
    try:
        key = hashlib.sha256(f"{text}\0{fastjsonschema.VERSION}\0{sys.version}".encode()).hexdigest()[:24]
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plughost" / "validators"
        path = root / f"{name}-{key}.bin"
        try:
            code = marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            code = compile(fastjsonschema.compile_to_code(schema), f"<validator {name}>", "exec")
            root.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(code))
            tmp.replace(path)
        namespace: dict[str, Any] = {}
        exec(code, namespace)  # noqa: S102 - code generated from the host's own schema, above
        funcs = [v for k, v in namespace.items() if k.startswith("validate") and callable(v)]
        return funcs[0] if len(funcs) == 1 else None
    except Exception:  # a read-only or odd home: compile in memory as before
        return None


def schema_errors(data: Any, schema: str) -> list[Any]:
    """Every jsonschema error of ``data`` against the named schema, ordered by path and message.
    The compiled validator (:func:`_fast`) accepts valid data first: jsonschema is imported only to
    explain a failure."""
    try:
        _fast(schema)(data)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    return sorted(_validator(schema).iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))


def validate(data: Any, schema: str, source: str, *, partial: bool = False) -> None:
    """Raise UserError(`<source>: <field>: <expected>`) for the first (stable-ordered) defect.

    ``partial``: a missing top-level required field is no defect (the fields present are checked).
    """
    try:
        _fast(schema)(data)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    errors = sorted((e for e in _validator(schema).iter_errors(data)
                     if not (partial and e.validator == "required" and not e.absolute_path)),
                    key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        where, what = describe_error(errors[0])
        raise UserError(f"{source}: {where or '(top level)'}: {what}")


def all_errors(data: Any, schema: str, source: str) -> list[str]:
    """Every defect as a one-line message (for `plughost manifests check`)."""
    out = []
    for err in sorted(_validator(schema).iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        where, what = describe_error(err)
        out.append(f"{source}: {where or '(top level)'}: {what}")
    return out


def _yaml_loader() -> Any:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster when present


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when PyYAML has it (~10x faster than the pure-Python parser)."""
    return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader


def split_frontmatter(path: Path) -> tuple[str, str]:
    """(YAML text between the leading `---` lines, Markdown body) of PLUGIN.md or an agent file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    match = _FRONTMATTER.match(text)
    if not match:
        raise UserError(f"{path}: frontmatter: expected a YAML block between '---' lines at the top")
    return match.group(1), text[match.end():]


def read_frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    """Split PLUGIN.md into (frontmatter mapping, body). Raises UserError on bad YAML."""
    head, body = split_frontmatter(path)
    return _parse_head(head, path), body


def _parse_head(head: str, path: Path) -> dict[str, Any]:
    global _LOADER
    if _LOADER is None:
        _LOADER = _yaml_loader()
    try:
        data = yaml.load(head, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{path}: frontmatter: invalid YAML{line}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: frontmatter: expected a mapping of fields (got {type(data).__name__})")
    return data


def manifest_errors(path: Path) -> list[str]:
    """All defects of one PLUGIN.md, one line each (empty when valid)."""
    try:
        data, _ = read_frontmatter(path)
    except UserError as exc:
        return [str(exc)]
    errors = all_errors(data, "plugin", str(path))
    if not errors and isinstance(data.get(HOST_RANGE), str):
        try:
            check_specifier(data[HOST_RANGE], str(path))
        except UserError as exc:
            errors.append(str(exc))
    return errors


def load_manifest(path: Path, seen: dict[str, dict[str, Any]] | None = None) -> PluginManifest:
    """Parse and validate one PLUGIN.md. With ``seen`` (the caller's, keyed by the frontmatter's
    text), a frontmatter already parsed and validated is neither again: a built-in plugin reached
    as its entry point and as the payload's copy of it is one read (``plughost boot``)."""
    head, body = split_frontmatter(path)
    data = seen.get(head) if seen is not None else None
    if data is None:
        data = _parse_head(head, path)
        validate(data, "plugin", str(path))
        if HOST_RANGE in data:
            check_specifier(data[HOST_RANGE], str(path))
        if seen is not None:
            seen[head] = data
    return from_mapping(data, path, body)


def from_mapping(data: dict[str, Any], path: Path | None, body: str = "") -> PluginManifest:
    tools = []
    for t in data.get("tools") or []:
        admin = bool(t.get("adminAllowlist", False))
        tools.append(
            ToolDecl(
                name=t["name"],
                description=t.get("description", ""),
                admin_allowlist=admin,
                eager=bool(t.get("eager", admin)),
                input_schema=t.get("inputSchema"),
            )
        )
    return PluginManifest(
        name=data["name"],
        path=path,
        description=data.get("description", ""),
        version=str(data.get("version", "0.0.0")),
        surface=data.get("surface", "feature"),
        author=data.get("author"),
        tools=tools,
        mcp=data.get("mcp"),
        mcp_manifest=data.get("mcp-manifest", "auto"),
        python=data.get("python"),
        skills=data.get("skills", "skills"),
        agents=data.get("agents", "agents"),
        hooks=data.get("hooks", "hooks"),
        requires_plughost=data.get(HOST_RANGE),
        provides=tuple(data.get("provides") or ()),
        needs=tuple(data.get("needs") or ()),
        body=body,
    )


def code_declaration(obj: Any, source: str) -> dict[str, Any]:
    """``provides``/``needs`` of a plugin declared in code (an entry point without PLUGIN.md, a plugin
    registered in process): its ``PROVIDES`` and ``NEEDS`` attributes, lists of capability names.
    A bad value is a UserError naming ``source`` and the attribute."""
    out: dict[str, Any] = {}
    for key, attr in CODE_FIELDS.items():
        value = getattr(obj, attr, None)
        if value is None:
            continue
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise UserError(f"{source}: {attr}: expected a list of capability names (got {type(value).__name__} {value!r})")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not CAPABILITY.match(item):
                raise UserError(f"{source}: {attr}[{i}]: expected a value matching {CAPABILITY.pattern} (got {item!r})")
        if len(set(value)) != len(value):
            raise UserError(f"{source}: {attr}: names a capability twice ({', '.join(value)})")
        out[key] = list(value)
    return out
