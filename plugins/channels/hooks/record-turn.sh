#!/bin/sh
# Claude Code Stop hook: `plughost record-turn` (docs/channels.md#turn-recorder). Claude Code spawns hooks with a
# minimal environment; the interpreter is found as the MCP servers find theirs: PLUGHOST_PYTHON
# (the config dir's settings.json env, written by `plughost install`), else the one generation
# recorded in ../.claude-plugin/python, else a checkout's .venv, else python3.
# Never blocks the session: a failure (an interpreter that cannot import host) leaves its
# stderr and exit 1, a non-blocking hook error that `plughost doctor` reports.
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
py="$PLUGHOST_PYTHON"
if [ -z "$py" ] && [ -r "$here/../.claude-plugin/python" ]; then read -r py <"$here/../.claude-plugin/python"; fi
if [ -z "$py" ]; then
  if [ -x "$here/../../../.venv/bin/python" ]; then py="$here/../../../.venv/bin/python"; else py=python3; fi
fi
"$py" -m plughost.cli record-turn >/dev/null && exit 0
echo "[channels] op=record-turn-failed python=$py" >&2
exit 1
