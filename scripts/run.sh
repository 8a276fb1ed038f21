#!/usr/bin/env bash
# The main job in one command (scaffolding; each step runs when its command is installed):
#   demo account -> default brand bundled + installed into a local Claude Code config dir
#   -> boot gates -> `plughost serve` on 127.0.0.1 -> URLs and a sample memory-search.
#
#   scripts/run.sh                 # data in ./.plughost-demo, port 8787
#   PORT=0 scripts/run.sh          # any free port
#   PLUGHOST_HOME=/tmp/x BRAND=studio scripts/run.sh
#
# Ctrl-C (or SIGTERM) stops the server gracefully.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
PY="$ROOT/.venv/bin/python"

export PLUGHOST_HOME="${PLUGHOST_HOME:-$ROOT/.plughost-demo}"
export ACCOUNT_ID="${ACCOUNT_ID:-demo}"
BRAND="${BRAND:-default}"
PORT="${PORT:-8787}"
CONFIG_DIR="${CONFIG_DIR:-$PLUGHOST_HOME/claude-config}"
PAYLOAD="$PLUGHOST_HOME/payload-$BRAND"
QUERY="${QUERY:-opening hours}"
mkdir -p "$PLUGHOST_HOME"

ph() { (cd "$ROOT" && "$PY" -m host.cli "$@"); }
has() { ph "$1" --help >/dev/null 2>&1; }
step() { printf '==> %s\n' "$*"; }
skip() { printf '    (skipped: `plughost %s` is not available in this checkout)\n' "$1"; }

step "demo account '$ACCOUNT_ID' and its knowledge graph"
if has demo; then ph demo; else
  skip demo
  if has account && [[ ! -f "$PLUGHOST_HOME/accounts/$ACCOUNT_ID/account.json" ]]; then
    ph account create "$ACCOUNT_ID"
  fi
fi

step "bundle brand '$BRAND' -> $PAYLOAD"
if has bundle; then ph bundle "$BRAND" --out "$PAYLOAD"; else skip bundle; fi

step "install into $CONFIG_DIR"
if has install && [[ -d "$PAYLOAD" ]]; then
  ph install "$PAYLOAD" --config-dir "$CONFIG_DIR" --account "$ACCOUNT_ID"
else skip install; fi

step "serve (gates first) on 127.0.0.1:$PORT"
LOG="$PLUGHOST_HOME/serve-stdout.txt"
: >"$LOG"
ph serve --host 127.0.0.1 --port "$PORT" --config-dir "$CONFIG_DIR" --brand "$BRAND" >"$LOG" &
SERVE=$!
trap 'kill -TERM "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true' INT TERM
for _ in $(seq 1 300); do
  grep -q "serving on" "$LOG" && break
  if ! kill -0 "$SERVE" 2>/dev/null; then
    wait "$SERVE" || exit $?
  fi
  sleep 0.1
done
cat "$LOG"
BASE="$(grep -o 'http://127.0.0.1:[0-9]*' "$LOG" | head -1)"

step "sample memory-search: \"$QUERY\""
if has memory; then ph memory search "$QUERY" || true; else skip "memory search"; fi
step "health"
"$PY" -c 'import json, sys, urllib.request; print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1])), indent=2))' \
  "$BASE/healthz" || true

echo "serving at $BASE (Ctrl-C to stop)"
tail -n +100 -f "$LOG" --pid "$SERVE" 2>/dev/null &
wait "$SERVE"
