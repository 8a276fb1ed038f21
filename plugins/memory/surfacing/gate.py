"""The consult-before-send gate: Claude Code's ``PreToolUse`` hook on document deliverables.

The owner's standing rules reach every admin turn by code; the rest of their preferences are read
on demand with ``profile-read``, a judgement the agent can skip. This gate turns that judgement
into a check at the one place a skipped read does harm: a document about to leave for a customer.
A call to a deliverable tool (``PLUGHOST_CONSULT_GATE_TOOLS``) that delivers a document (a file
path with a ``documents`` folder in it, or attachments) is refused, exit 2 with one line on
stderr that Claude Code hands back to the agent, when the session's transcript shows no
``profile-read`` call after the last message the user typed. Tool results are ``user`` records
in the transcript and do not count as messages; neither do Claude Code's meta records
(command caveats, compaction summaries) or a subagent's sidechain.

Everything else passes (exit 0): any other tool, a listed tool that delivers no document (a
casual reply), a session that is not the owner's (a visitor's, an agent's, one with scopes, as
:func:`plughost.ports.principal.resolve` decides: it cannot read the owner's preferences anyway), the gate turned off (``PLUGHOST_CONSULT_GATE=0``), and anything the gate
cannot read (no input, a transcript that is missing, not a regular file, or without a user message
in its last ``TAIL_BYTES``). Each call logs one ``[consult-gate] op=block|pass tool=.. reason=..``
line on stderr and in ``<PLUGHOST_HOME>/logs/server.log``.

It runs on every call the ``hooks.json`` matcher lets through, so like ``hook.py`` it imports
nothing but builtins (``python -S -I``; ``hook.py``'s C-level JSON scanner and settings merge) until a document is
at stake; only then does it ask the one resolver whose session this is.
"""

from __future__ import annotations

import posix
import sys
import time

TYPE_CHECKING = False  # builtins only: no typing import in the hook process
if TYPE_CHECKING:
    from collections.abc import Callable

_STARTED = time.perf_counter()

if __package__:  # imported by the host (tests, docs): the package's module
    from plughost.plugins.memory.surfacing import hook  # noqa: E402
else:  # the hook process: the sibling builtins-only stage on sys.path
    import hook  # type: ignore[no-redef,import-not-found,unused-ignore]  # noqa: E402

DEFAULT_TOOLS = ("Write,Edit,MultiEdit,SendUserFile,mcp__*__*pdf-save*,mcp__*__*send*,mcp__*__*email*,"
                 "mcp__*__*mail*")
"""``PLUGHOST_CONSULT_GATE_TOOLS``' default, a copy: the gate imports builtins only, so it cannot read
``plughost.plugins.memory.settings``; tests/host/test_settings.py pins the two equal."""
DOCUMENT_FOLDER = "documents"
"""A file delivered into a folder of this name (``.../users/<id>/documents/quote.pdf``) is a document."""
PATH_KEYS = ("file_path", "filePath", "path", "filename", "destination", "outputPath", "output_path")
ATTACHMENT_KEYS = ("attachments", "attachment", "files", "attachmentPaths")
CONSULT_TOOL = "profile-read"
TAIL_BYTES = 2 << 20
"""At most this much of the transcript's end is read (``plughost.plugins.memory.transcript_tail.TAIL_BYTES``)."""
BLOCK_EXIT = 2


def glob(pattern: str, name: str) -> bool:
    """``*`` matches any run of characters (no other wildcard: tool names hold no ``?`` or ``[``)."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == name
    if not name.startswith(parts[0]) or not name.endswith(parts[-1]) or len(name) < len(parts[0]) + len(parts[-1]):
        return False
    pos, end = len(parts[0]), len(name) - len(parts[-1])
    for part in parts[1:-1]:
        found = name.find(part, pos, end)
        if found < 0:
            return False
        pos = found + len(part)
    return True


def listed(tool: str, env: dict[str, str]) -> bool:
    raw = env.get("PLUGHOST_CONSULT_GATE_TOOLS", "").strip() or DEFAULT_TOOLS
    return any(glob(p.strip().lower(), tool.lower()) for p in raw.split(",") if p.strip())  # names ignore case


def is_document(tool_input: object) -> bool:
    """Whether the call delivers a document: a path into a ``documents`` folder, or attachments."""
    if not isinstance(tool_input, dict):
        return False
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and DOCUMENT_FOLDER in _folders(value):
            return True
    return any(tool_input.get(key) for key in ATTACHMENT_KEYS)


def _folders(path: str) -> list[str]:
    """The folders of ``path`` after ``.`` and ``..`` are resolved, case folded (``Documents`` is one)."""
    out: list[str] = []
    for part in path.replace("\\", "/").split("/")[:-1]:
        if part == "..":
            if out:
                out.pop()
        elif part and part != ".":
            out.append(part.casefold())
    return out


def is_consult(name: object) -> bool:
    """``profile-read`` by any of its names (bare, or ``mcp__plugin_memory_memory__profile-read``)."""
    return isinstance(name, str) and (name == CONSULT_TOOL or name.endswith("__" + CONSULT_TOOL))


def tail(path: object) -> tuple[bytes | None, str]:
    """``transcript_tail.read_tail`` in builtins: a regular file's last ``TAIL_BYTES``, or a reason."""
    if not isinstance(path, str) or not path:
        return None, "no-transcript"
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY | posix.O_CLOEXEC)
    except (OSError, ValueError):
        return None, "unreadable-transcript"
    try:
        info = posix.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000:
            return None, "not-a-regular-file"
        start = max(0, info.st_size - TAIL_BYTES)
        chunks, pos = [], start
        while pos < info.st_size:
            chunk = posix.pread(fd, min(1 << 18, info.st_size - pos), pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
    except OSError:
        return None, "unreadable-transcript"
    finally:
        posix.close(fd)
    data = b"".join(chunks)
    return (data.partition(b"\n")[2] if start > 0 else data), "ok"


def typed_by_user(record: dict[str, object]) -> bool:
    """A ``user`` record that is a message someone typed: not a tool result, meta record or sidechain."""
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("isSidechain"):
        return False
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list):
        return False
    return any(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
               and b["text"].strip() for b in content)


def used_since_user(data: bytes, wanted: Callable[[object], bool]) -> bool | None:
    """Whether a ``tool_use`` the ``wanted`` predicate accepts (by tool name) came after the owner's
    last typed message in a transcript: True, False (the message came last), None (no such message).
    The one walk both PreToolUse gates make (this one, ``ask_gate``)."""
    for line in reversed(data.split(b"\n")):
        if not line.strip():
            continue
        try:
            record = hook.loads(line.decode("utf-8", "replace"))
        except hook.Slow:
            continue  # a torn or foreign line: not a record
        if not isinstance(record, dict) or record.get("isSidechain"):
            continue
        kind = record.get("type")
        if kind == "assistant":
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use"
                                                 and wanted(b.get("name")) for b in content):
                return True
        elif kind == "user" and typed_by_user(record):
            return False
    return None


def consulted(data: bytes) -> str:
    """``consulted``, ``not-consulted`` (a user message came last) or ``no-user-message``."""
    found = used_since_user(data, is_consult)
    return "no-user-message" if found is None else "consulted" if found else "not-consulted"


def owner_session(env: dict[str, str]) -> bool | None:
    """Whether the session is an owner's (admin, unnarrowed), as :func:`plughost.ports.principal.resolve`
    decides it (``context.resolve``; None: no account named). Imported only here, for a document
    about to be delivered: every other call stays builtins-only."""
    if __package__:
        from plughost.plugins.memory.surfacing import context
    else:
        import context  # type: ignore[no-redef,import-not-found,unused-ignore]
    ctx = context.resolve(env)
    if ctx is None:
        return None
    return ctx.role in (None, "admin") and ctx.scopes is None and not ctx.agent


def decide(raw: bytes, env: dict[str, str], process_env: dict[str, str] | None = None) -> tuple[str, str, str]:
    """``(op, tool, reason)``: op ``block`` or ``pass``. ``env`` is the process env merged with the
    config dir's settings (the gate's own settings), ``process_env`` the process env as it came."""
    try:
        data = hook.loads(raw.decode("utf-8", "replace"))
    except hook.Slow:
        return "pass", "", "unreadable-input"
    if not isinstance(data, dict):
        return "pass", "", "unreadable-input"
    name = data.get("tool_name")
    tool = name if isinstance(name, str) else ""
    if data.get("hook_event_name") not in (None, "PreToolUse"):
        return "pass", tool, "not-pre-tool-use"
    if env.get("PLUGHOST_CONSULT_GATE", "1").strip().lower() in ("0", "false", "no", "off"):
        return "pass", tool, "off"
    if not tool or not listed(tool, env):
        return "pass", tool, "not-a-deliverable"
    if not is_document(data.get("tool_input")):
        return "pass", tool, "not-a-document"
    owner = owner_session(env if process_env is None else process_env)
    if owner is None:
        return "pass", tool, "no-account"
    if not owner:
        return "pass", tool, "not-owner"
    transcript, why = tail(data.get("transcript_path"))
    if transcript is None:
        return "pass", tool, why
    found = consulted(transcript)
    if found == "not-consulted":
        return "block", tool, "no-profile-read"
    return "pass", tool, found


def account_unset(env: dict[str, str], process: dict[str, str]) -> str | None:
    """``context.account_unset_line`` when no account can be named (the gate then never blocks, so the
    fix is said on every call); None otherwise. The check is a string test unless ``ACCOUNT_ID`` is missing."""
    if hook.names_an_account(env):
        return None
    if __package__:
        from plughost.plugins.memory.surfacing import context
    else:
        import context  # type: ignore[no-redef,import-not-found,unused-ignore]
    if context.resolve(process) is not None:
        return None
    return str(context.account_unset_line(process))


def log(env: dict[str, str], line: str) -> None:
    try:
        home = env.get("PLUGHOST_HOME", "").strip()
        home = hook.expand(home, env) if home else hook.expand("~/.plughost", env)
    except hook.Slow:
        return
    if env.get("PLUGHOST_LOG_FILE", "1") == "0":
        return
    try:
        fd = posix.open(home + "/logs/server.log", posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT, 0o600)
    except OSError:
        return  # no install there (or no logs folder yet): create nothing
    try:
        hook.write_all(fd, (line + "\n").encode("utf-8", "replace"))
    finally:
        posix.close(fd)


def run_gate(tag: str, decide_fn: Callable[[bytes, dict[str, str], dict[str, str]], tuple[str, str, str]],
             detail: str, started: float) -> None:
    """One PreToolUse gate process, as Claude Code runs it: read stdin (bounded), decide, say one
    ``[tag] op=… tool=… reason=… ms=…`` line on stderr and in the server log, exit ``BLOCK_EXIT``
    on a block and 0 otherwise; a gate that cannot decide never blocks."""
    code = 0
    try:
        raw = b""
        if not posix.isatty(0):
            chunks, size = [], 0
            while size <= hook.MAX_STDIN and (chunk := posix.read(0, 1 << 16)):
                chunks.append(chunk)
                size += len(chunk)
            raw = b"".join(chunks)
        process = {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
                   for k, v in posix.environ.items()}
        try:
            env = hook.merged_env(process)
        except hook.Slow:
            env = process
        op, tool, reason = ("pass", "", "input-too-large") if len(raw) > hook.MAX_STDIN else decide_fn(raw, env, process)
        ms = f"{(time.perf_counter() - started) * 1000:.1f}"
        line = f"[{tag}] op={op} tool={tool or '-'} reason={reason}"
        if op == "block":
            line += f' detail="{detail}"'
            code = BLOCK_EXIT
        line = line.replace("\n", " ").replace("\r", " ")
        hook.write_all(2, (line + f" ms={ms}\n").encode("utf-8", "replace"))
        log(env, line + f" ms={ms}")
        unset = account_unset(env, process)
        if unset:
            hook.write_all(2, (unset + "\n").encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001 - a gate that cannot decide never blocks
        code = 0
    try:
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    posix._exit(code)


def main() -> None:
    run_gate("consult-gate", decide, f"read the owner's preferences with {CONSULT_TOOL} before delivering this"
             " document, then apply them and retry", _STARTED)


if __name__ == "__main__":
    main()
