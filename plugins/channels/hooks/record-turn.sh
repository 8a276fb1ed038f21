#!/bin/sh
# Claude Code Stop hook: `plughost record-turn` (SPEC 10.6). Claude Code spawns hooks with a
# minimal environment, so find the install's interpreter explicitly. Never fails the session.
here="$(cd "$(dirname "$0")" 2>/dev/null && pwd)"
repo="$(cd "$here/../../.." 2>/dev/null && pwd)"
if [ -n "$PLUGHOST_PYTHON" ]; then py="$PLUGHOST_PYTHON"
elif [ -n "$PLATFORM_ROOT" ] && [ -x "$PLATFORM_ROOT/.venv/bin/python" ]; then py="$PLATFORM_ROOT/.venv/bin/python"
elif [ -x "$repo/.venv/bin/python" ]; then py="$repo/.venv/bin/python"
elif command -v plughost >/dev/null 2>&1; then plughost record-turn >/dev/null 2>&1; exit 0
else py=python3
fi
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$py" -m host.cli record-turn >/dev/null 2>&1
exit 0
