#!/bin/sh
# Claude Code UserPromptSubmit hook: prompt-time memory surfacing (plugins/memory/surfacing/).
# Claude Code spawns hooks with a minimal environment, so find the install's interpreter
# explicitly; -S keeps the warm path to the standard library. Never fails the prompt.
here="$(cd "$(dirname "$0")" 2>/dev/null && pwd)"
repo="$(cd "$here/../../.." 2>/dev/null && pwd)"
if [ -z "$PLUGHOST_PYTHON" ]; then  # an installed copy: the installer wrote the interpreter here
  dotenv="${PLUGHOST_HOME:-$HOME/.plughost}/.env"
  [ -r "$dotenv" ] && PLUGHOST_PYTHON="$(sed -n 's/^PLUGHOST_PYTHON=//p' "$dotenv" | tail -n 1)"
fi
if [ -n "$PLUGHOST_PYTHON" ]; then py="$PLUGHOST_PYTHON"
elif [ -n "$PLATFORM_ROOT" ] && [ -x "$PLATFORM_ROOT/.venv/bin/python" ]; then py="$PLATFORM_ROOT/.venv/bin/python"
elif [ -x "$repo/.venv/bin/python" ]; then py="$repo/.venv/bin/python"
else py=python3
fi
"$py" -S "$here/../surfacing/client.py"
exit 0
