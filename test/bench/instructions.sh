#!/usr/bin/env bash
# Instructions per request, counted by valgrind's callgrind (main thread; JIT warm-up excluded): steady where
# wall-clock time on a shared machine is not. Needs valgrind (Debian package). Each server takes 1–3 minutes.
# Usage: instructions.sh DIR [endpoint-run|flags|reads]
# - endpoint-run (default; `BENCH_ONLY=instructions npm run bench`, which builds dist/ and writes DIR's run.json,
#   body.json, keys.json, snapshot.json): a cached named-endpoint run on the built sidecar, against the bare server
#   answering the same POST, and the bare server reading the body first.
# - flags (`BENCH_ONLY=instructions-flags npm run bench`, which writes DIR's flags-body.json and
#   flags-defs-N.json for each N of INSTR_FLAG_COUNTS): one user's `POST /flags?v=2` on the built sidecar, offline on
#   N flags, against the bare server reading the body and answering the bytes the sidecar answered. The same body
#   every request: from its third on, the kept answer (src/http/answer-cache.ts); for the evaluation itself run it
#   with FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES=0 in the environment (the sidecar inherits it). With
#   NEW_PERSON=user-4242-bench (the bench user's distinct id) a new person each request (post-client.mjs), as a
#   server SDK asking for many users sends; INSTR_SIDECAR_ONLY=1 skips the bare server.
# - reads (`BENCH_ONLY=instructions-reads npm run bench`, which writes DIR's snapshot.json, etag.txt, keys.json and
#   flag.json): the snapshot GET (`/flags/definitions?token=…&send_cohorts`, a 200 with the body, and a 304 to
#   If-None-Match) and a cached read-through hit (a flag retrieve; the stand-in upstream answers it once), each
#   against the bare server answering the same bytes, on one keep-alive connection (INSTR_CONNS) that stays open from
#   warm-up to the end. INSTR_READS picks cases (default "200 304 hit"). The stand-in upstream listens on
#   INSTR_PORT + 2 (the ops listener on + 1), so helpers benching side by side on their own ports do not collide.
# Env: INSTR_WARM (default 6000), INSTR_COUNT (default 3000), INSTR_FLAG_COUNTS (default "30 1000"); with N flags
# the flags part sends INSTR_WARM·30/N and INSTR_COUNT·30/N requests (at least 100 and 50); INSTR_PORT (default
# 18040) for the measured server; INSTR_VALGRIND_ARGS (default none) more callgrind options, e.g. --cache-sim=yes; INSTR_DIST (default dist) the build the sidecar runs from (say, a build of the
# commit before a change, kept beside dist/ inside the checkout so that it finds node_modules).
set -euo pipefail
dir=$1
part=${2:-endpoint-run}
root=$(cd "$(dirname "$0")/../.." && pwd)
warm=${INSTR_WARM:-6000}
count=${INSTR_COUNT:-3000}
port=${INSTR_PORT:-18040}
dist=${INSTR_DIST:-dist}
command -v valgrind >/dev/null || { echo 'valgrind is not installed: apt-get install -y valgrind'; exit 1; }
cd "$root"

# How a measured server is asked: POST (the default) or GET (`reads`); set before calling measure.
client=post
ask() { # PATH BODY_FILE|STATUS [IF_NONE_MATCH]: one request, for the probe (answer to $dir/answer.json)
  if [ "$client" = post ]; then
    curl -s -f -o "$dir/answer.json" -X POST -H 'Authorization: Bearer phx_bench_key' -H 'content-type: application/json' --data-binary @"$2" "http://127.0.0.1:$port$1"
  else
    curl -s -f -o "$dir/answer.json" -H 'Authorization: Bearer phx_bench_key' "http://127.0.0.1:$port$1"
  fi
}

measure() { # NAME PATH BODY_FILE|STATUS IF_NONE_MATCH WARM COUNT, then the server command (listening on $port)
  local name=$1 path=$2 body=$3 inm=$4 warm=$5 count=$6
  shift 6
  rm -f "$dir"/cg.out*
  valgrind --tool=callgrind ${INSTR_VALGRIND_ARGS:-} --separate-threads=yes --trace-children=yes --callgrind-out-file="$dir/cg.out" "$@" >"$dir/valgrind.log" 2>&1 &
  local server=$!
  for _ in $(seq 600); do
    ask "$path" "$body" && break
    sleep 0.5
  done
  # Warm-up and count on the same connections (the client zeroes and dumps the counters itself).
  if [ "$client" = post ]; then
    CG_PID=$server node test/bench/post-client.mjs "$port" "$path" "$body" phx_bench_key "$warm" "$count" "${INSTR_CONNS:-10}"
  else
    CG_PID=$server node test/bench/get-client.mjs "$port" "$path" phx_bench_key "$warm" "$count" "$body" "$inm" "${INSTR_CONNS:-1}"
  fi
  sleep 1
  kill "$server" 2>/dev/null || true # already gone: its dump is written
  wait "$server" 2>/dev/null || true
  # The first dump, main thread (--separate-threads writes one file per thread, -01 the main one).
  local main="$dir/cg.out.1-01"
  local total
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$main")
  echo "$name: $((total / count)) instructions per request (main thread)"
  [ -z "${INSTR_KEEP:-}" ] || cp "$main" "$dir/cg-$(echo "$name" | tr -c 'A-Za-z0-9\n' '-').out"
}

if [ "$part" = reads ]; then
  client=get
  etag=$(cat "$dir/etag.txt")
  sidecar_env() { # extra settings for the online (read-through) case, if any
    export FLAG_SIDECAR_BOOTSTRAP_FILE="$dir/snapshot.json" FLAG_SIDECAR_KEYS_FILE="$dir/keys.json" FLAG_SIDECAR_PROJECTS=1:phc_bench \
      FLAG_SIDECAR_LISTEN=127.0.0.1:$port FLAG_SIDECAR_OPS_LISTEN=127.0.0.1:$((port + 1)) FLAG_SIDECAR_LOG_LEVEL=warn
  }
  defs='/flags/definitions?token=phc_bench&send_cohorts'
  for case in ${INSTR_READS:-200 304 hit}; do
    case $case in
      200)
        (sidecar_env; measure 'sidecar, snapshot GET 200' "$defs" 200 - "$warm" "$count" node "$dist/main.js")
        measure 'bare server, snapshot 200' /flags/definitions 200 - "$warm" "$count" node test/bench/bare-server.mjs "$dir/snapshot.json" "$port" "$etag" ;;
      304)
        (sidecar_env; measure 'sidecar, snapshot GET 304' "$defs" 304 "$etag" "$warm" "$count" node "$dist/main.js")
        measure 'bare server, snapshot 304' /flags/definitions 304 "$etag" "$warm" "$count" node test/bench/bare-server.mjs "$dir/snapshot.json" "$port" "$etag" ;;
      hit)
        node test/bench/upstream-server.mjs "$dir/snapshot.json" "$dir/flag.json" $((port + 2)) 0 &
        upstream=$!
        (sidecar_env; export FLAG_SIDECAR_UPSTREAM_URL=http://127.0.0.1:$((port + 2)) FLAG_SIDECAR_UPSTREAM_KEY=phs_benchown FLAG_SIDECAR_CACHE_TTL=1h FLAG_SIDECAR_POLL_INTERVAL=1h
          measure 'sidecar, read-through hit' /api/projects/1/feature_flags/1/ 200 - "$warm" "$count" node "$dist/main.js")
        kill $upstream; wait $upstream 2>/dev/null || true
        measure 'bare server, read-through body' /api/projects/1/feature_flags/1/ 200 - "$warm" "$count" node test/bench/bare-server.mjs "$dir/flag.json" "$port" 'W/"x"' ;;
    esac
  done
  exit 0
fi

if [ "$part" = flags ]; then
  for n in ${INSTR_FLAG_COUNTS:-30 1000}; do
    w=$((warm * 30 / n)); c=$((count * 30 / n))
    [ "$w" -ge 100 ] || w=100
    [ "$c" -ge 50 ] || c=50
    (
      export FLAG_SIDECAR_BOOTSTRAP_FILE="$dir/flags-defs-$n.json" FLAG_SIDECAR_KEYS_FILE="$dir/keys.json" FLAG_SIDECAR_PROJECTS=1:phc_bench \
        FLAG_SIDECAR_LISTEN=127.0.0.1:$port FLAG_SIDECAR_OPS_LISTEN=127.0.0.1:$((port + 1)) FLAG_SIDECAR_LOG_LEVEL=warn
      measure "sidecar, POST /flags?v=2, $n flags" '/flags?v=2' "$dir/flags-body.json" - "$w" "$c" node "$dist/main.js"
    )
    cp "$dir/answer.json" "$dir/flags-answer-$n.json"
    echo "  (answer $(wc -c <"$dir/flags-answer-$n.json") B)"
    [ -z "${INSTR_SIDECAR_ONLY:-}" ] || continue
    measure "bare server reading the body, same answer ($n flags)" '/flags?v=2' "$dir/flags-body.json" - "$w" "$c" \
      node test/bench/bare-server.mjs "$dir/flags-answer-$n.json" "$port" 'W/"x"' read-body
  done
  exit 0
fi

path=/api/projects/1/endpoints/daily_views/run/
node test/bench/upstream-server.mjs "$dir/snapshot.json" "$dir/snapshot.json" 18030 50 "$dir/run.json" &
upstream=$!
trap 'kill $upstream 2>/dev/null || true' EXIT
measure 'bare server' "$path" "$dir/body.json" - "$warm" "$count" node test/bench/bare-server.mjs "$dir/run.json" "$port" 'W/"x"'
measure 'bare server reading the body' "$path" "$dir/body.json" - "$warm" "$count" node test/bench/bare-server.mjs "$dir/run.json" "$port" 'W/"x"' read-body
(
  export FLAG_SIDECAR_BOOTSTRAP_FILE="$dir/snapshot.json" FLAG_SIDECAR_KEYS_FILE="$dir/keys.json" FLAG_SIDECAR_PROJECTS=1:phc_bench \
    FLAG_SIDECAR_LISTEN=127.0.0.1:$port FLAG_SIDECAR_OPS_LISTEN=127.0.0.1:$((port + 1)) FLAG_SIDECAR_LOG_LEVEL=warn \
    FLAG_SIDECAR_UPSTREAM_URL=http://127.0.0.1:18030 FLAG_SIDECAR_UPSTREAM_KEY=phs_benchown FLAG_SIDECAR_ENDPOINT_RUN_TTL=1h \
    FLAG_SIDECAR_POLL_INTERVAL=1h
  measure 'sidecar, cached run' "$path" "$dir/body.json" - "$warm" "$count" node "$dist/main.js"
)
