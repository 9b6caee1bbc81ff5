#!/usr/bin/env bash
# Reproduces the seeds' I/O findings on this machine: synchronous reads vs I/O slaves vs
# io_uring, small vs large buffers, multiplexing 1/4/8/16, channels 1..4. Every run starts with
# a cold page cache (root drops it), backs up the same pgbench cluster to a local repository
# without compression, and reads recman's own statistics. Not a test: it prints figures.
#
#   sudo bench/io-bench.sh [--scale N] [--out docs/io-benchmark.md]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCALE=30
OUT="$ROOT/docs/io-benchmark.md"
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "unknown option $1; usage: $0 [--scale N] [--out FILE]" >&2; exit 2 ;;
    esac
done
# shellcheck source=../scripts/setup.sh
source "$ROOT/scripts/setup.sh"
BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/recman-iobench.XXXXXX)
chown postgres: "$WORK"
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() { as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
cp "$ROOT/target/release/recman" "$WORK/recman"
R="$WORK/recman"
PORT=$((56000 + RANDOM % 1000))
mkdir -p "$WORK/sock" && chown postgres: "$WORK/sock"
as_pg "$BIN/initdb" -D "$WORK/pgdata" --data-checksums --auth=trust -U postgres >/dev/null
cat >> "$WORK/pgdata/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK/sock'
wal_level = replica
archive_mode = on
archive_command = '$R --repo $WORK/repo archive-push %p'
max_wal_size = 1GB
autovacuum = off
CONF
as_pg "$R" --repo "$WORK/repo" create catalog >/dev/null
as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -l "$WORK/server.log" -w start >/dev/null
TARGET="host=$WORK/sock port=$PORT user=postgres dbname=postgres"
as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$PORT" -U postgres -i -s "$SCALE" -q postgres >/dev/null 2>&1
as_pg "$BIN/psql" -h "$WORK/sock" -p "$PORT" -U postgres -qAt -c checkpoint postgres
as_pg "$R" --repo "$WORK/repo" --pgdata "$WORK/pgdata" --target "$TARGET" register database --name bench >/dev/null
SIZE_MB=$(du -sm "$WORK/pgdata/base" | cut -f1)

drop_cache() { sync; if [[ -w /proc/sys/vm/drop_caches ]]; then echo 3 > /proc/sys/vm/drop_caches; fi; }

ROWS=()
REPEAT=${REPEAT:-3}
# One measured backup; prints "total|sustained|long-wait share|wait s|bottleneck".
once() {
    drop_cache
    local out
    out=$(as_pg "$R" --repo "$WORK/repo" --pgdata "$WORK/pgdata" --target "$TARGET" backup database --tag BENCH "$@" 2>&1) || { echo "$out" >&2; exit 1; }
    local total sustained
    total=$(sed -n 's/.*total \([0-9.]*\) MB\/s.*/\1/p' <<<"$out")
    sustained=$(sed -n 's/.*sustained \([0-9.]*\) MB\/s.*/\1/p' <<<"$out")
    local report json
    report=$(as_pg "$R" --repo "$WORK/repo" report io BENCH --json)
    json=$(printf '%s' "$report" | python3 -c '
import json, sys
r = json.load(sys.stdin)
inp = [x for x in r["rows"] if x["kind"] == "INPUT"]
io = sum(x["io_count"] for x in inp) or 1
lw = sum(x["long_waits"] for x in inp)
wt = sum(x["long_wait_time"] for x in inp) / 1e6
diag = next((d for d in r["diagnosis"] if d.startswith("bottleneck")), "-").split(" —")[0]
diag = diag[len("bottleneck: "):] if diag.startswith("bottleneck: ") else diag
print(f"{lw/io*100:.0f}%|{wt:.1f}|{diag}")
')
    rm -rf "$WORK/repo/bench/backup"/B*
    echo "$total|$sustained|$json"
}
# The median of $REPEAT runs, by sustained speed.
run() {
    local label=$1; shift
    local results=() i
    for ((i = 0; i < REPEAT; i++)); do results+=("$(once "$@")"); done
    local med
    med=$(printf '%s\n' "${results[@]}" | sort -t'|' -k2 -n | sed -n "$(( (REPEAT + 1) / 2 ))p")
    local spread
    spread=$(printf '%s\n' "${results[@]}" | awk -F'|' 'NR==1{mn=$2;mx=$2} {if($2<mn)mn=$2; if($2>mx)mx=$2} END{printf "%.0f-%.0f", mn, mx}')
    IFS='|' read -r total sustained lw wt diag <<<"$med"
    ROWS+=("| $label | \`$*\` | $total | $sustained | $spread | $lw | $wt | $diag |")
    printf '%-34s total %8s MB/s  sustained %8s MB/s (%s)  %s %s %s\n' "$label" "$total" "$sustained" "$spread" "$lw" "$wt" "$diag"
}

echo "== cluster: pgbench scale $SCALE, $SIZE_MB MB in base/; cold cache each run, median of $REPEAT"
once --io sync >/dev/null   # warm-up: the host may cache the virtual disk after first touch
run "sync reads" --io sync
run "I/O slaves (4 threads)" --io threads --io-slaves 4
run "io_uring" --io uring
run "sync, 8K buffers" --io sync --input-buffer-size 8K --input-buffers 1
run "sync, 1M buffers" --io sync --input-buffer-size 1M
run "io_uring, 8K buffers" --io uring --input-buffer-size 8K --input-buffers 1
run "io_uring, 1M buffers" --io uring --input-buffer-size 1M
for m in 1 4 8 16; do run "io_uring, multiplexing $m" --io uring --maxopenfiles "$m"; done
for c in 1 2 3 4; do run "io_uring, $c channel(s)" --io uring --channels "$c"; done
drop_cache
VALIDATE=$(as_pg "$R" --pgdata "$WORK/pgdata" validate database --io uring | sed -n 's/.*(\([0-9.]*\) MB\/s.*/\1/p')
echo "validate database (read phase only): $VALIDATE MB/s"

{
    echo "# I/O benchmark"
    echo
    echo "Made by \`bench/io-bench.sh\` on $(date -u +%Y-%m-%d): $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
    echo "$(free -g | awk '/Mem:/{print $2}') GiB memory, kernel $(uname -r), data and repository on $(df -h "$WORK" | awk 'NR==2{print $1}')."
    echo "Cluster: pgbench scale $SCALE ($SIZE_MB MB in base/), data checksums on, every run from a cold page cache,"
    echo "no compression, one backup at a time to a local repository (so the same disk reads and writes)."
    echo
    echo "Each figure is the median of $REPEAT runs (the sustained range is shown), after one discarded warm-up run."
    echo
    echo "| run | options | total MB/s | sustained MB/s | sustained range | input long waits | input wait s | bottleneck (recman's diagnosis) |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "\`recman validate database --io uring\` (the read phase alone, RMAN's BACKUP VALIDATE method): $VALIDATE MB/s."
} > "$OUT"
echo "written: $OUT"
