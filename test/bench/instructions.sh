#!/usr/bin/env bash
# Instructions per request, counted by valgrind's callgrind (main thread; JIT warm-up excluded): steady where
# wall-clock time on a shared machine is not. A cached named-endpoint run (the endpoint-run part's request) on the
# built sidecar, against the bare server answering the same POST, and the bare server reading the body first.
# Needs valgrind (Debian package). Run by `BENCH_ONLY=instructions npm run bench` (which builds dist/ and writes
# the files in DIR: run.json, body.json, keys.json, snapshot.json). Env: INSTR_WARM (default 6000), INSTR_COUNT
# (default 3000). Each server takes 1–3 minutes under valgrind.
set -euo pipefail
dir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
warm=${INSTR_WARM:-6000}
count=${INSTR_COUNT:-3000}
path=/api/projects/1/endpoints/daily_views/run/
command -v valgrind >/dev/null || { echo 'valgrind is not installed: apt-get install -y valgrind'; exit 1; }
cd "$root"
node test/bench/upstream-server.mjs "$dir/snapshot.json" "$dir/snapshot.json" 18030 50 "$dir/run.json" &
upstream=$!
trap 'kill $upstream 2>/dev/null || true' EXIT

measure() { # NAME, then the server command (listening on 18040)
  local name=$1
  shift
  rm -f "$dir"/cg.out*
  valgrind --tool=callgrind --separate-threads=yes --trace-children=yes --callgrind-out-file="$dir/cg.out" "$@" >"$dir/valgrind.log" 2>&1 &
  local server=$!
  for _ in $(seq 600); do
    curl -s -o /dev/null -X POST -H 'Authorization: Bearer phx_bench_key' -H 'content-type: application/json' --data-binary @"$dir/body.json" "http://127.0.0.1:18040$path" && break
    sleep 0.5
  done
  node test/bench/post-client.mjs 18040 "$path" "$dir/body.json" phx_bench_key "$warm"
  callgrind_control -z "$server" >/dev/null
  node test/bench/post-client.mjs 18040 "$path" "$dir/body.json" phx_bench_key "$count"
  callgrind_control -d "$server" >/dev/null
  sleep 1
  kill "$server"
  wait "$server" 2>/dev/null || true
  # The first dump, main thread (--separate-threads writes one file per thread, -01 the main one).
  local main="$dir/cg.out.1-01"
  local total
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$main")
  echo "$name: $((total / count)) instructions per request (main thread)"
}

measure 'bare server' node test/bench/bare-server.mjs "$dir/run.json" 18040 'W/"x"'
measure 'bare server reading the body' node test/bench/bare-server.mjs "$dir/run.json" 18040 'W/"x"' read-body
(
  export FLAG_SIDECAR_BOOTSTRAP_FILE="$dir/snapshot.json" FLAG_SIDECAR_KEYS_FILE="$dir/keys.json" FLAG_SIDECAR_PROJECTS=1:phc_bench \
    FLAG_SIDECAR_LISTEN=127.0.0.1:18040 FLAG_SIDECAR_OPS_LISTEN=127.0.0.1:18041 FLAG_SIDECAR_LOG_LEVEL=warn \
    FLAG_SIDECAR_UPSTREAM_URL=http://127.0.0.1:18030 FLAG_SIDECAR_UPSTREAM_KEY=phs_bench_own FLAG_SIDECAR_ENDPOINT_RUN_TTL=1h \
    FLAG_SIDECAR_POLL_INTERVAL=1h
  measure 'sidecar, cached run' node dist/main.js
)
