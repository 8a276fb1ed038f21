#!/bin/sh
# Claude Code's memory hooks (UserPromptSubmit, Stop, PostToolUse[Failure], PreCompact, SessionStart):
# plugins/memory/surfacing/hook.py hands the input to `plughost serve` with builtins only, and
# passes anything else to client.py (the full hook process, with its cold fallback).
# The interpreter, as the MCP servers find theirs: PLUGHOST_PYTHON (the config dir's settings.json
# env, written by `plughost install`), else the one generation recorded in
# ../.claude-plugin/python, else a checkout's .venv, else python3; -S -I keep the start to the
# interpreter itself. No subshell or command runs before the interpreter (each fork is a
# millisecond of every prompt): `read` and `[` are shell builtins.
# Never blocks the prompt: an interpreter that cannot start is one stderr line and exit 1
# (a non-blocking hook error in Claude Code; `plughost doctor` reports it).
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
py="$PLUGHOST_PYTHON"
if [ -z "$py" ] && [ -r "$here/../.claude-plugin/python" ]; then read -r py <"$here/../.claude-plugin/python"; fi
if [ -z "$py" ]; then
  if [ -x "$here/../../../.venv/bin/python" ]; then py="$here/../../../.venv/bin/python"; else py=python3; fi
fi
# imported, not run as a script: a script is compiled on every start, a module once (__pycache__)
"$py" -S -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import hook; hook.main()' "$here/../surfacing" && exit 0
echo "[surface] op=hook-failed python=$py" >&2
exit 1
