#!/usr/bin/env bash
# A real Neo4j for tests and benches: Neo4j's own test harness (community database, Bolt only)
# on 127.0.0.1 on a free port, data in a temp dir, stopped by PID.
#
#   eval "$(bash scripts/neo4j/neo4j.sh start)"   # prints NEO4J_URI=… NEO4J_VERSION=… NEO4J_PID=… NEO4J_RUN_DIR=…
#   bash scripts/neo4j/neo4j.sh stop "$NEO4J_RUN_DIR"
#   bash scripts/neo4j/neo4j.sh fetch             # only fetch the jars (Maven, cached in ~/.m2)
#   bash scripts/neo4j/neo4j.sh lib               # fetch, then print the jars' folder (it holds
#                                                 # neo4j-admin's import tool: org.neo4j.cli.AdminTool)
#
# The jars and the compiled launcher live in the ignored cache folder .cache/neo4j/<version>-<key>
# (PLUGHOST_NEO4J_CACHE overrides it). NEO4J_HEAP (default 1g; initial = maximum, as Neo4j's
# memory guide recommends: growing the heap costs full collections) and NEO4J_PAGECACHE (default
# 512m) size the JVM; NEO4J_JAVA_OPTS adds JVM flags (e.g. -XX:TieredStopAtLevel=1: C1 only, a
# fiftieth of the JIT CPU of a fresh server's first 100k-line import, 1.4x its Bolt worker CPU);
# NEO4J_RUN_PARENT (default $TMPDIR or /tmp) holds the run folder (/dev/shm spares tests the
# commit fsyncs). Progress goes to stderr as [neo4j] key=value lines.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VERSION="$(sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$HERE/pom.xml")"
KEY="$(cat "$HERE/pom.xml" "$HERE/src/Launcher.java" | sha256sum | cut -c1-12)"
CACHE="${PLUGHOST_NEO4J_CACHE:-$ROOT/.cache/neo4j}/$VERSION-$KEY"
say() { printf '[neo4j] %s\n' "$*" >&2; }

fetch() {
  if [[ -f "$CACHE/.complete" ]]; then return 0; fi
  command -v mvn >/dev/null || { say "error=mvn-missing detail='Maven (mvn) is needed to fetch org.neo4j.test:neo4j-harness'"; exit 3; }
  command -v javac >/dev/null || { say "error=javac-missing detail='a JDK 17+ is needed'"; exit 3; }
  say "fetch version=$VERSION cache=$CACHE"
  rm -rf "$CACHE.tmp" && mkdir -p "$CACHE.tmp/lib" "$CACHE.tmp/classes"
  local t0=$SECONDS
  local mvn=(mvn -q -B -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies
             -DincludeScope=runtime -DoutputDirectory="$CACHE.tmp/lib")
  # Offline first: once ~/.m2 holds the jars this needs no network and takes seconds.
  "${mvn[@]}" -o >/dev/null 2>&1 || "${mvn[@]}" >&2
  javac -nowarn -d "$CACHE.tmp/classes" -cp "$CACHE.tmp/lib/*" "$HERE/src/Launcher.java" >&2
  touch "$CACHE.tmp/.complete"
  rm -rf "$CACHE" && mv "$CACHE.tmp" "$CACHE"
  say "fetched version=$VERSION jars=$(ls "$CACHE/lib" | wc -l) seconds=$((SECONDS - t0))"
}

start() {
  fetch
  local run pid uri line
  run="$(mktemp -d "${NEO4J_RUN_PARENT:-${TMPDIR:-/tmp}}/plughost-neo4j.XXXXXX")"
  # setsid: the JVM gets its own process group, so a Ctrl-C in the caller's terminal reaches
  # the caller's trap (which stops it cleanly) rather than killing it mid-write.
  # shellcheck disable=SC2086  # NEO4J_JAVA_OPTS: extra JVM flags, split on spaces
  setsid java -Xms"${NEO4J_HEAP:-1g}" -Xmx"${NEO4J_HEAP:-1g}" -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow ${NEO4J_JAVA_OPTS:-} \
    --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED \
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
    -cp "$CACHE/classes:$CACHE/lib/*" Launcher "$run/data" 0 "${NEO4J_PAGECACHE:-512m}" \
    >"$run/neo4j.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$run/pid"
  for _ in $(seq 1 1800); do
    line="$(grep -m1 '^neo4j-ready ' "$run/neo4j.log" || true)"
    [[ -n "$line" ]] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      say "error=start-failed log=$run/neo4j.log"; tail -n 30 "$run/neo4j.log" >&2; exit 1
    fi
    sleep 0.1
  done
  if [[ -z "$line" ]]; then
    say "error=start-timeout log=$run/neo4j.log"; kill -TERM "$pid" 2>/dev/null || true; exit 1
  fi
  uri="$(sed -n 's/.*uri=\([^ ]*\).*/\1/p' <<<"$line")"
  uri="${uri%/}"
  local version; version="$(sed -n 's/.*version=\([^ ]*\).*/\1/p' <<<"$line")"
  say "ready uri=$uri version=$version pid=$pid dir=$run"
  printf 'NEO4J_URI=%s\nNEO4J_VERSION=%s\nNEO4J_PID=%s\nNEO4J_RUN_DIR=%s\n' "$uri" "$version" "$pid" "$run"
}

stop() {
  local run="${1:?usage: neo4j.sh stop RUN_DIR}" pid
  [[ -f "$run/pid" ]] || { say "stop dir=$run state=not-running"; return 0; }
  pid="$(cat "$run/pid")"
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then say "stop pid=$pid state=killed"; kill -KILL "$pid" 2>/dev/null || true
    else say "stop pid=$pid state=stopped"; fi
  fi
  rm -rf "$run"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop "${2:-}" ;;
  lib) fetch; echo "$CACHE/lib" ;;
  *) echo "usage: neo4j.sh fetch | lib | start | stop RUN_DIR" >&2; exit 2 ;;
esac
