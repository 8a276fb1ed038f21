#!/bin/sh
# Claude Code's memory hooks (UserPromptSubmit, Stop, PostToolUse[Failure], PreCompact, SessionStart):
# plugins/memory/surfacing/hook.py hands the input to `plughost serve` with builtins only, and
# passes anything else to client.py (the full hook process, with its cold fallback).
# Claude Code gives hooks the config dir's settings.json env, where `plughost install` put
# PLUGHOST_PYTHON (the install's interpreter); -S -I keep the start to the interpreter itself.
# No subshell or command runs before the interpreter (each fork is a millisecond of every prompt).
# Never fails the prompt.
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
if [ -n "$PLUGHOST_PYTHON" ]; then py="$PLUGHOST_PYTHON"
elif [ -n "$PLATFORM_ROOT" ] && [ -x "$PLATFORM_ROOT/.venv/bin/python" ]; then py="$PLATFORM_ROOT/.venv/bin/python"
elif [ -x "$here/../../../.venv/bin/python" ]; then py="$here/../../../.venv/bin/python"
else py=python3
fi
# imported, not run as a script: a script is compiled on every start, a module once (__pycache__)
"$py" -S -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import hook; hook.main()' "$here/../surfacing"
exit 0
