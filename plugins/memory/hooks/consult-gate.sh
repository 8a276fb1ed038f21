#!/bin/sh
# Claude Code PreToolUse hook: the consult-before-send gate (plugins/memory/surfacing/gate.py,
# docs/memory.md#consult-before-send). Exit 2 (one stderr line, handed back to the agent) refuses
# a document deliverable when no profile-read ran since the user's last message; exit 0 otherwise.
# The interpreter is found as surface-prompt.sh finds it. A gate that cannot start never blocks:
# one stderr line and exit 1 (a non-blocking hook error that `plughost doctor` reports).
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
py="$PLUGHOST_PYTHON"
if [ -z "$py" ] && [ -r "$here/../.claude-plugin/python" ]; then read -r py <"$here/../.claude-plugin/python"; fi
if [ -z "$py" ]; then
  if [ -x "$here/../../../.venv/bin/python" ]; then py="$here/../../../.venv/bin/python"; else py=python3; fi
fi
"$py" -S -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import gate; gate.main()' "$here/../surfacing"
code=$?
[ "$code" -eq 0 ] || [ "$code" -eq 2 ] && exit "$code"
echo "[consult-gate] op=hook-failed python=$py" >&2
exit 1
