#!/bin/sh
# Claude Code UserPromptSubmit and Stop hook: prompt-time memory surfacing and recall tracking
# (plugins/memory/surfacing/client.py tells the two apart by hook_event_name).
# Claude Code gives hooks the config dir's settings.json env, where `plughost install` put
# PLUGHOST_PYTHON (the install's interpreter); -S keeps the warm path to the standard library.
# Never fails the prompt.
here="$(cd "$(dirname "$0")" 2>/dev/null && pwd)"
repo="$(cd "$here/../../.." 2>/dev/null && pwd)"
if [ -n "$PLUGHOST_PYTHON" ]; then py="$PLUGHOST_PYTHON"
elif [ -n "$PLATFORM_ROOT" ] && [ -x "$PLATFORM_ROOT/.venv/bin/python" ]; then py="$PLATFORM_ROOT/.venv/bin/python"
elif [ -x "$repo/.venv/bin/python" ]; then py="$repo/.venv/bin/python"
else py=python3
fi
"$py" -S "$here/../surfacing/client.py"
exit 0
