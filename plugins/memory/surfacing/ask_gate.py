"""The investigate-before-asking gate: Claude Code's ``PreToolUse`` hook on ``AskUserQuestion``.

An owner who asks their agent for something wants it done, not a menu of questions the agent
could have answered itself from the shop's memory, its files or the conversation. The rule
(docs/memory.md#investigate-before-asking): in an owner's session, ``AskUserQuestion`` is refused,
exit 2 with one stderr line that Claude Code hands back to the agent, when the session's transcript
shows no investigation tool call (``PLUGHOST_ASK_GATE_TOOLS``: read-only look-ups such as ``Read``,
``Grep``, ``memory-search``) after the last message the owner typed. Once the agent has looked
something up in the current turn, its question passes, and so does every later one of that turn.
"Typed" is the consult gate's notion (:func:`gate.typed_by_user`): tool results, meta records and
a subagent's sidechain are not messages.

Everything else passes (exit 0): another tool, a session that is not the owner's (a visitor's,
an agent's, one with scopes: it has no owner to ask), the gate turned off (``PLUGHOST_ASK_GATE=0``),
and anything the gate cannot read (no input, a transcript missing or without a typed message in its
tail). Each call logs one ``[ask-gate] op=block|pass tool=.. reason=..`` line on stderr and in
``<PLUGHOST_HOME>/logs/server.log``, as the consult gate does, whose builtins-only helpers it uses.
"""

import time

_STARTED = time.perf_counter()

if __package__:  # imported by the host (tests, docs): the package's modules
    from plughost.plugins.memory.surfacing import gate, hook  # noqa: E402
else:  # the hook process: the sibling builtins-only stages on sys.path
    import gate  # type: ignore[no-redef,import-not-found,unused-ignore]  # noqa: E402
    import hook  # type: ignore[no-redef,import-not-found,unused-ignore]  # noqa: E402

ASK_TOOL = "AskUserQuestion"
DEFAULT_TOOLS = ("Read,Grep,Glob,LS,WebSearch,WebFetch,ToolSearch,mcp__*__*search*,mcp__*__*read*,"
                 "mcp__*__*list*,mcp__*__*get*")
"""``PLUGHOST_ASK_GATE_TOOLS``' default, a copy (the gate imports builtins only); tests/host/test_settings.py
pins the two equal."""
DETAIL = ("investigate before asking the owner: look it up with your tools first (memory-search, the files, "
          "the conversation), then ask only what they do not answer and say what you checked")


def investigative(name: object, env: dict[str, str]) -> bool:
    if not isinstance(name, str) or not name:
        return False
    raw = env.get("PLUGHOST_ASK_GATE_TOOLS", "").strip() or DEFAULT_TOOLS
    return any(gate.glob(p.strip().lower(), name.lower()) for p in raw.split(",") if p.strip())


def investigated(data: bytes, env: dict[str, str]) -> str:
    """``investigated``, ``not-investigated`` (the owner's message came last) or ``no-user-message``."""
    found = gate.used_since_user(data, lambda name: investigative(name, env))
    return "no-user-message" if found is None else "investigated" if found else "not-investigated"


def decide(raw: bytes, env: dict[str, str], process_env: dict[str, str] | None = None) -> tuple[str, str, str]:
    """``(op, tool, reason)``: op ``block`` or ``pass`` (``env``: merged with the config dir's settings)."""
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
    if tool != ASK_TOOL:
        return "pass", tool, "not-a-question"
    if env.get("PLUGHOST_ASK_GATE", "1").strip().lower() in ("0", "false", "no", "off"):
        return "pass", tool, "off"
    transcript, why = gate.tail(data.get("transcript_path"))
    if transcript is None:
        return "pass", tool, why
    found = investigated(transcript, env)
    if found != "not-investigated":
        return "pass", tool, found
    # only a question about to be refused asks the resolver whose session this is (it imports the host)
    owner = gate.owner_session(env if process_env is None else process_env)
    if owner is None:
        return "pass", tool, "no-account"
    if not owner:
        return "pass", tool, "not-owner"
    return "block", tool, "no-investigation"


def main() -> None:
    gate.run_gate("ask-gate", decide, DETAIL, _STARTED)


if __name__ == "__main__":
    main()
