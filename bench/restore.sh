#!/usr/bin/env bash
# Restore against the disk's write limit and against pgBackRest, in one run on one disk: a
# pgbench cluster backed up once by each tool (lz4, CHANNELS channels = process-max), then cold
# restores taking turns (the order rotates each round): recman with its defaults (which probe
# the target's disk), recman --write-mode direct and buffered, pgBackRest restore. Every file of
# every restore is durable when the tool returns: recman fsyncs every file before it reports
# done, pgBackRest fsyncs each file it writes, and a `sync` after pgBackRest, timed with it,
# covers whatever it leaves to the flusher. The limit is fio's best write of the same number of
# bytes: direct or buffered (with an fsync at the end), queue depth 1 or 16, 1 MiB requests.
# Not a test: prints each run, the medians and the ratios. Run as root.
#
#   bench/restore.sh [RECMAN_BINARY]
#   env: SCALE=200 RUNS=3 CHANNELS=2 PGBIN=/usr/lib/postgresql/15/bin
#        THROTTLE=READ:WRITE (the root blkio group holds every process, the flusher threads
#        included: see bench/peers.sh --throttle)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath "${1:-$ROOT/target/release/recman}")
SCALE=${SCALE:-200}
RUNS=${RUNS:-3}
CHANNELS=${CHANNELS:-2}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
fail() { echo "restore-bench: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "run as root (drop_caches, runs PostgreSQL as postgres)"
[[ -x $BIN ]] || fail "no recman binary at $BIN; hint: cargo build --release"
for t in pgbackrest fio bc; do command -v $t >/dev/null || fail "$t is not installed"; done
# shellcheck source=bench/common.sh
source "$ROOT/bench/common.sh"
bench_pg_work recman-restore-bench
cold() { bench_cold; }

as_pg "$PGBIN/initdb" -D "$PG" --data-checksums -A trust -U postgres >/dev/null
cat >>"$PG/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
archive_mode = on
archive_command = '$BIN --repo $WORK/rrepo archive-push %p && pgbackrest --config $WORK/pgbackrest.conf --stanza main archive-push %p'
max_wal_size = 8GB
checkpoint_timeout = 30min
autovacuum = off
CONF
cat >"$WORK/pgbackrest.conf" <<CONF
[global]
repo1-path=$WORK/pgbr
lock-path=$WORK/lock
log-path=$WORK/log
log-level-console=warn
process-max=$CHANNELS
compress-type=lz4
start-fast=y
[main]
pg1-path=$PG
pg1-socket-path=$WORK
pg1-port=$PORT
CONF
mkdir -p "$WORK"/{pgbr,lock,log}
chown -R postgres: "$WORK"
as_pg "$BIN" --repo "$WORK/rrepo" create catalog >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PG" -l "$WORK/pg.log" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s "$SCALE" -q postgres >/dev/null 2>&1
as_pg "$BIN" --repo "$WORK/rrepo" --pgdata "$PG" --target "host=$WORK port=$PORT user=postgres dbname=postgres" register database --name main >/dev/null
as_pg pgbackrest --config "$WORK/pgbackrest.conf" --stanza main stanza-create >/dev/null
as_pg "$BIN" --repo "$WORK/rrepo" --pgdata "$PG" --target "host=$WORK port=$PORT user=postgres dbname=postgres" backup database --channels "$CHANNELS" --compress lz4 -q
as_pg pgbackrest --config "$WORK/pgbackrest.conf" --stanza main --type full backup
as_pg "$PGBIN/pg_ctl" -D "$PG" -m fast -w stop >/dev/null
DB=$(du -sb --exclude=pg_wal "$PG" | cut -f1)

# The write limit: fio writing DB bytes four ways; the best MB/s.
limit() {
    local best
    best=$(bench_best_write "$WORK/fio.dat" "$DB")
    [[ -n $best ]] || fail "fio failed"
    echo "$best"
}
# secs CMD...: wall seconds of CMD from a cold cache, then a sync that counts with it.
secs() {
    local t0 t1
    rm -rf "$WORK/to"
    cold
    t0=$(date +%s.%N)
    "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; fail "failed: $*"; }
    sync
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
# -v: each run's own account of how it wrote (the writers, what the adaptive chooser saw) is
# printed under its time.
recman_restore() { as_pg "$BIN" --repo "$WORK/rrepo" restore database --to "$WORK/to" --channels "$CHANNELS" -v "$@"; }
pgbr_restore() { mkdir -p "$WORK/to" && chown postgres: "$WORK/to" && chmod 700 "$WORK/to" && as_pg pgbackrest --config "$WORK/pgbackrest.conf" --stanza main --pg1-path="$WORK/to" restore; }
TOOLS=(auto direct buffered pgbackrest)
declare -A T
echo "restore: pgbench scale $SCALE, $((DB / 1000000)) MB without pg_wal, $CHANNELS channels, $(nproc) cores, $($BIN --version 2>/dev/null), ${THROTTLE:+throttle $THROTTLE, }$(date -u +%FT%TZ)"
LIMITS=()
for ((run = 1; run <= RUNS; run++)); do
    LIMITS+=("$(limit)")
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do
        tool=${TOOLS[$(((k + run) % ${#TOOLS[@]}))]}
        case $tool in
        auto) s=$(secs recman_restore) ;;
        direct | buffered) s=$(secs recman_restore --write-mode "$tool") ;;
        pgbackrest) s=$(secs pgbr_restore) ;;
        esac
        T[$tool]+="$s "
        echo "  run $run $tool: ${s}s, $(echo "$DB / 1000000 / $s" | bc) MB/s"
        [[ $tool == pgbackrest ]] || grep -E 'adaptive|writer' "$WORK/last.log" | sed 's/^/      /' || true
    done
    echo "  run $run write limit: ${LIMITS[-1]} MB/s"
done
med() { bench_median "$@"; }
lim=$(med "${LIMITS[@]}")
# shellcheck disable=SC2086
p=$(med ${T[pgbackrest]})
echo "| tool | seconds (median) | MB/s | ÷ write limit ($lim MB/s) | ÷ pgBackRest |"
echo "|---|---|---|---|---|"
for tool in "${TOOLS[@]}"; do
    # shellcheck disable=SC2086
    s=$(med ${T[$tool]})
    mbs=$(echo "$DB / 1000000 / $s" | bc)
    echo "| $tool | $s | $mbs | $(echo "scale=2; $mbs / $lim" | bc) | $(echo "scale=2; $p / $s" | bc) |"
done
