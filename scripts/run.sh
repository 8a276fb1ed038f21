#!/usr/bin/env bash
# The main job in one command: demo account and brand site -> the demo's brand bundled + installed
# into a local Claude Code config dir -> boot gates -> `plughost serve` on 127.0.0.1 -> the URLs,
# a chat that answers from the demo's memory, and the sample search to paste.
#
#   scripts/run.sh                 # data in ./.plughost-demo, port 8787
#   PORT=0 scripts/run.sh          # any free port
#   PLUGHOST_HOME=/tmp/x BRAND=studio scripts/run.sh
#   PLUGHOST_AGENT=claude scripts/run.sh   # the webchat's agent: memory (default) | claude | command
#   NEO4J_URI=bolt://127.0.0.1:7687 scripts/run.sh   # the graph on Neo4j (scripts/neo4j/neo4j.sh starts one)
#
# Details go to $PLUGHOST_HOME/run.log (the previous start's in run.log.1). Ctrl-C (or SIGTERM) stops the server and everything it started.
set -euo pipefail

T0=$(date +%s%N)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${PORT:-}" ]] && { ! [[ "$PORT" =~ ^[0-9]{1,5}$ ]] || (( 10#$PORT > 65535 )); }; then
  echo "run.sh: PORT must be a number from 0 to 65535 (0: any free port), not '$PORT'" >&2
  exit 2
fi
bash "$ROOT/scripts/setup.sh"
PY="$ROOT/.venv/bin/python"

PLUGHOST_HOME="${PLUGHOST_HOME:-$ROOT/.plughost-demo}"
mkdir -p "$PLUGHOST_HOME"
PLUGHOST_HOME="$(cd "$PLUGHOST_HOME" && pwd)"  # absolute: the commands below run from the checkout
export PLUGHOST_HOME
export ACCOUNT_ID="${ACCOUNT_ID:-demo}"
BRAND="${BRAND:-bakery}"  # the demo bakery's brand: its productName is the name the webchat greets with
export PLUGHOST_BRAND="$BRAND"
PORT="${PORT:-8787}"
CONFIG_DIR="${CONFIG_DIR:-$PLUGHOST_HOME/claude-config}"
PAYLOAD="$PLUGHOST_HOME/payload-$BRAND"
QUERY="${QUERY:-opening hours}"
if [[ -n "${NEO4J_URI:-}" && "${PLUGHOST_STORE:-}" != sqlite ]]; then
  export PLUGHOST_STORE=neo4j  # every step on this server; the install records it (and NEO4J_*) in $PLUGHOST_HOME/.env
  echo "graph store: neo4j at $NEO4J_URI"
fi
cd "$ROOT"
LOG="$PLUGHOST_HOME/run.log"
OUT="$PLUGHOST_HOME/serve-stdout.txt"
# the previous start's log is kept beside it (one generation): what went wrong last time survives a restart
if [[ -s "$LOG" ]]; then mv -f "$LOG" "$LOG.1"; fi
: >"$LOG"
: >"$OUT"
chmod 600 "$LOG" "$OUT"  # what the server prints can name the account's private memory

SERVE=""
stop() {  # the server and everything it started (agents run in their own groups; serve ends them)
  if [[ -n "${DEMO:-}" ]] && kill -0 "$DEMO" 2>/dev/null; then kill -TERM "$DEMO" 2>/dev/null || true; fi
  if [[ -n "$SERVE" ]] && kill -0 "$SERVE" 2>/dev/null; then
    kill -TERM "$SERVE" 2>/dev/null || true
    wait "$SERVE" 2>/dev/null || true
  fi
  SERVE=""
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

ph() { "$PY" -m plughost.cli "$@"; }
step() { printf '==> %s\n' "$*"; }
quiet() {  # run a plughost command, its output to the log; on failure show the log's tail
  if ! ph "$@" >>"$LOG" 2>&1; then
    printf 'plughost %s failed; the last lines of %s:\n' "$1" "$LOG" >&2
    tail -n 15 "$LOG" >&2
    exit 1
  fi
}
elapsed() { printf '%.1fs' "$(( $(date +%s%N) - T0 ))e-9"; }

DEMO_OUT="$PLUGHOST_HOME/demo-stdout.txt"
DEMO=""
demo_done() {  # the demo's lines, or its failure with the log's tail
  if ! wait "$1"; then
    printf 'plughost demo failed; the last lines of %s:\n' "$LOG" >&2
    tail -n 15 "$LOG" >&2
    exit 1
  fi
  sed 's/^/    /' "$DEMO_OUT"
}
if [[ -f "$PLUGHOST_HOME/accounts/$ACCOUNT_ID/account.json" ]]; then
  # warm start: the account exists, so the demo's check and sample search run beside the server's start
  ph demo --query "$QUERY" >"$DEMO_OUT" 2>>"$LOG" &
  DEMO=$!
else
  step "demo account '$ACCOUNT_ID', its knowledge and brand site"
  ph demo --query "$QUERY" >"$DEMO_OUT" 2>>"$LOG" &
  demo_done $!
fi
step "bundle brand '$BRAND' and install it into $CONFIG_DIR"
quiet bundle "$BRAND" --out "$PAYLOAD"
quiet install "$PAYLOAD" --config-dir "$CONFIG_DIR" --account "$ACCOUNT_ID"

step "serve (gates first) on 127.0.0.1:$PORT"
# a simple command, not a function or subshell: `$!` is the server's own PID, so the trap reaches it
"$PY" -m plughost.cli serve --host 127.0.0.1 --port "$PORT" --config-dir "$CONFIG_DIR" --brand "$BRAND" >"$OUT" 2>>"$LOG" &
SERVE=$!
for _ in $(seq 1 600); do
  grep -q "serving on" "$OUT" && break
  if ! kill -0 "$SERVE" 2>/dev/null; then
    grep -E 'startup-self-test|FATAL|WARN|refus|^plughost: ' "$LOG" | sed 's/^/    /' >&2 || true
    printf 'plughost serve stopped; see %s\n' "$LOG" >&2
    SERVE=""
    exit 1
  fi
  sleep 0.1
done
# "ready" means ready to answer: the agent runner has loaded what its first turn needs
for _ in $(seq 1 600); do
  grep -qE '\[channels\] op=runner-(ready|warm-failed)' "$LOG" && break
  sleep 0.1
done
grep -E '^startup-self-test | (FATAL|WARN) |^\[boot\] op=gates|\[channels\] op=runner-(ready|warm-failed)' "$LOG" | sed 's/^/    /' || true
if [[ -n "$DEMO" ]]; then
  step "demo account '$ACCOUNT_ID', its knowledge and brand site (checked while the server started)"
  demo_done "$DEMO"
  DEMO=""
fi
cat "$OUT"
BASE="$(grep -o 'http://127.0.0.1:[0-9]*' "$OUT" | head -1)"
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }  # single-quoted for the shell
# the MCP Inspector pinned in scripts/tools-package.json, run by the Node pinned beside it: a bare
# npx resolves whichever Inspector it finds (an old one that fails on Node 20)
TOOLS_BIN="$ROOT/.tools/node_modules/.bin"
echo "  the mcp URLs speak MCP over streamable HTTP; the pinned MCP Inspector lists a server's tools"
if [[ ! -x "$TOOLS_BIN/mcp-inspector" ]]; then
  echo "  (once bash $(q "$ROOT/scripts/install-tools.sh") installed it):"
else
  echo "  (any MCP client with the header works too):"
fi
echo "  PATH=$(q "$TOOLS_BIN"):\"\$PATH\" mcp-inspector --cli $BASE/mcp/memory --transport http" \
     "--header \"Authorization: Bearer \$(cat $PLUGHOST_HOME/accounts/$ACCOUNT_ID/credentials/http-token)\" --method tools/list"
echo "rerun the sample search:"
echo "  PLUGHOST_HOME=$(q "$PLUGHOST_HOME") ACCOUNT_ID=$(q "$ACCOUNT_ID") $(q "$ROOT/.venv/bin/plughost") memory search $(q "$QUERY")"
echo "the owner's console: $BASE/admin (set its PIN once: PLUGHOST_HOME=$(q "$PLUGHOST_HOME") $(q "$ROOT/.venv/bin/plughost") admin set-pin $(q "$ACCOUNT_ID"))"
echo "ready in $(elapsed); chat at $BASE/channels/webchat; log: $LOG"
echo "serving at $BASE (Ctrl-C to stop)"
wait "$SERVE" || true
SERVE=""
