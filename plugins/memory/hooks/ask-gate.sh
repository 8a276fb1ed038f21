#!/bin/sh
# Claude Code PreToolUse hook on AskUserQuestion: the investigate-before-asking gate
# (plugins/memory/surfacing/ask_gate.py, docs/memory.md#investigate-before-asking). Exit 2 (one
# stderr line, handed back to the agent) refuses the question in an owner's session when no
# investigation tool ran since the owner's last message; exit 0 otherwise. The interpreter is
# found as consult-gate.sh finds it. A gate that cannot start never blocks: one stderr line and
# exit 1 (a non-blocking hook error that `plughost doctor` reports).
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
py="$PLUGHOST_PYTHON"
if [ -z "$py" ] && [ -r "$here/../.claude-plugin/python" ]; then read -r py <"$here/../.claude-plugin/python"; fi
if [ -z "$py" ]; then
  if [ -x "$here/../../../.venv/bin/python" ]; then py="$here/../../../.venv/bin/python"; else py=python3; fi
fi
"$py" -S -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import ask_gate; ask_gate.main()' "$here/../surfacing"
code=$?
[ "$code" -eq 0 ] || [ "$code" -eq 2 ] && exit "$code"
echo "[ask-gate] op=hook-failed python=$py" >&2
exit 1
