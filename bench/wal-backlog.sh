#!/usr/bin/env bash
# The WAL backlog drain: an archiver that was down (archive_command failing) leaves N segments
# marked .ready; then archive_command is set to a tool and PostgreSQL's own archiver drains the
# backlog, calling it once per segment in order. Timed from the reload that sets the command
# to the moment pg_stat_archiver's last archived segment is the last one written, cold page
# cache, alternating recman (defaults) and pgBackRest (archive-async=y, process-max=2, its
# spool). Not a test: prints each run and the medians. Run as root.
#
#   bench/wal-backlog.sh [RECMAN_BINARY]
#   env: SEGMENTS=160 RUNS=3 PGBIN=/usr/lib/postgresql/15/bin THROTTLE=READ:WRITE (as peers.sh)
#        BEFORE=path of another recman binary (an earlier build), drained in the same rounds
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath "${1:-$ROOT/target/release/recman}")
SEGMENTS=${SEGMENTS:-160}
RUNS=${RUNS:-3}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
fail() { echo "wal-backlog: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "run as root (drop_caches, runs PostgreSQL as postgres)"
[[ -x $BIN ]] || fail "no recman binary at $BIN; hint: cargo build --release"
command -v pgbackrest >/dev/null || fail "pgbackrest is not installed; hint: apt-get install pgbackrest"
# pg_wal keeps up to min_wal_size (16 GB) of recycled segments, and both repositories keep every
# round's WAL: a run needs about that plus RUNS x 2 x SEGMENTS x 16 MiB.
need=$((16 * 1024 + RUNS * 2 * SEGMENTS * 16))
free=$(df -Pm /tmp | awk 'NR == 2 {print $4}')
((free >= need)) || fail "/tmp has ${free} MiB free, the run needs about ${need} MiB; hint: free space, or lower SEGMENTS or RUNS"
# shellcheck source=bench/common.sh
source "$ROOT/bench/common.sh"
bench_pg_work recman-backlog
psql() { as_pg "$PGBIN/psql" -h "$WORK" -p "$PORT" -qAtX -c "$1" postgres; }

as_pg "$PGBIN/initdb" -D "$PG" --data-checksums -A trust -U postgres >/dev/null
cat >>"$PG/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
archive_mode = on
archive_command = 'false'
max_wal_size = 16GB
min_wal_size = 16GB
checkpoint_timeout = 1h
autovacuum = off
CONF
cat >"$WORK/pgbackrest.conf" <<CONF
[global]
repo1-path=$WORK/pgbr
spool-path=$WORK/spool
lock-path=$WORK/lock
log-path=$WORK/log
log-level-console=warn
archive-async=y
process-max=2
compress-type=lz4
start-fast=y
[main]
pg1-path=$PG
pg1-socket-path=$WORK
pg1-port=$PORT
CONF
mkdir -p "$WORK"/{pgbr,spool,lock,log}
chown -R postgres: "$WORK"
as_pg "$PGBIN/pg_ctl" -D "$PG" -l "$WORK/pg.log" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s 5 -q postgres >/dev/null 2>&1
psql "create table backlog (id int, v text)" >/dev/null
as_pg "$BIN" --repo "$WORK/recman-repo" create catalog >/dev/null
as_pg "$BIN" --repo "$WORK/recman-repo" --pgdata "$PG" --target "host=$WORK port=$PORT user=postgres dbname=postgres" register database --name main >/dev/null
as_pg pgbackrest --config "$WORK/pgbackrest.conf" --stanza main stanza-create >/dev/null

# seg NAME: the segment's number counted from the timeline's start (16 MiB segments).
seg() { echo $((16#${1:8:8} * 256 + 16#${1:16:8})); }
# backlog: SEGMENTS segments of WAL left .ready; returns the last one's name.
backlog() {
    local start end
    psql "truncate backlog" >/dev/null
    start=$(psql "select pg_walfile_name(pg_current_wal_lsn())")
    while :; do
        # Bulk rows of random hex (lz4 stores such WAL at about half its size, like busy OLTP
        # WAL): pgbench's commits, each waiting for its fsync, write WAL too slowly on some
        # disks to build a backlog of 2.5 GB in minutes.
        psql "insert into backlog select g, md5(random()::text) || md5(random()::text)
              from generate_series(1, 400000) g" >/dev/null
        end=$(psql "select pg_walfile_name(pg_current_wal_lsn())")
        (( $(seg "$end") - $(seg "$start") >= SEGMENTS )) && break
    done
    psql "select pg_switch_wal()" >/dev/null
    psql "select pg_walfile_name(pg_current_wal_lsn() - 1)"
}
# The cluster's processes, and so every archive_command and what it starts, run in a cgroup v1
# cpuacct group: each drain also reports the CPU seconds it took, which other load on the host
# does not change the way it changes wall time.
CPU_GROUP=/sys/fs/cgroup/cpuacct/recman-bench-$$
cpu_usage() { [[ -e $CPU_GROUP/cpuacct.usage ]] && cat "$CPU_GROUP/cpuacct.usage" || echo 0; }
if [[ -d /sys/fs/cgroup/cpuacct ]] && mkdir -p "$CPU_GROUP" 2>/dev/null; then
    pm=$(head -1 "$PG/postmaster.pid")
    for pid in $pm $(pgrep -P "$pm"); do echo "$pid" >"$CPU_GROUP/cgroup.procs"; done
else
    echo "wal-backlog: no cgroup v1 cpuacct controller; CPU seconds are not reported" >&2
fi
# drain CMD: sets archive_command, waits until the last .ready is archived; prints wall seconds
# and CPU seconds.
drain() {
    local cmd=$1 last=$2 t0 c0
    bench_cold
    c0=$(cpu_usage)
    t0=$(date +%s.%N)
    psql "alter system set archive_command = '$cmd'" >/dev/null
    psql "select pg_reload_conf()" >/dev/null
    until [[ $(psql "select coalesce(last_archived_wal, '') >= '$last' from pg_stat_archiver") == t ]]; do
        sleep 0.05
    done
    echo "$(date +%s.%N) - $t0" | bc
    psql "alter system set archive_command = 'false'" >/dev/null
    psql "select pg_reload_conf()" >/dev/null
    # What the tool's background work still does after the last segment counts too.
    sleep 1
    echo "scale=2; ($(cpu_usage) - $c0) / 1000000000" | bc
}
RECMAN_CMD="$BIN --repo $WORK/recman-repo archive-push %p"
PGBR_CMD="pgbackrest --config $WORK/pgbackrest.conf --stanza main archive-push %p"
echo "wal backlog: $SEGMENTS segments, $(nproc) cores, $($BIN --version 2>/dev/null), ${THROTTLE:+throttle $THROTTLE, }$(date -u +%FT%TZ)"
declare -A T C
TOOLS=(recman pgbackrest)
if [[ -n ${BEFORE:-} ]]; then
    BEFORE=$(realpath "$BEFORE")
    [[ -x $BEFORE ]] || fail "no recman binary at BEFORE=$BEFORE"
    TOOLS+=(before)
    as_pg "$BEFORE" --repo "$WORK/before-repo" create catalog >/dev/null
    as_pg "$BEFORE" --repo "$WORK/before-repo" --pgdata "$PG" --target "host=$WORK port=$PORT user=postgres dbname=postgres" register database --name main >/dev/null
fi
BEFORE_CMD="${BEFORE:-} --repo $WORK/before-repo archive-push %p"
for ((run = 1; run <= RUNS; run++)); do
    # Each round starts with another tool, so none always drains first.
    n=${#TOOLS[@]}
    for ((k = 0; k < n; k++)); do
        tool=${TOOLS[$(((k + run - 1) % n))]}
        last=$(backlog)
        case $tool in
        recman) out=$(drain "$RECMAN_CMD" "$last") ;;
        pgbackrest) out=$(drain "$PGBR_CMD" "$last") ;;
        before) out=$(drain "$BEFORE_CMD" "$last") ;;
        esac
        s=$(sed -n 1p <<<"$out")
        cpu=$(sed -n 2p <<<"$out")
        T[$tool]+="$s "
        C[$tool]+="$cpu "
        echo "  run $run $tool: ${s}s for $SEGMENTS segments (last $last), ${cpu} CPU s"
    done
done
# shellcheck disable=SC2086
r=$(bench_median ${T[recman]})
# shellcheck disable=SC2086
p=$(bench_median ${T[pgbackrest]})
echo "median: recman ${r}s, pgBackRest async ${p}s; recman / pgBackRest speed: $(echo "scale=2; $p / $r" | bc)"
# shellcheck disable=SC2086
echo "median CPU: recman $(bench_median ${C[recman]}) s, pgBackRest async $(bench_median ${C[pgbackrest]}) s"
if [[ -n ${BEFORE:-} ]]; then
    # shellcheck disable=SC2086
    b=$(bench_median ${T[before]})
    echo "median: before ${b}s; recman / before speed: $(echo "scale=2; $b / $r" | bc)"
fi
echo "WAL: $SEGMENTS segments of 16 MiB, $(echo "scale=0; $SEGMENTS * 16.777216 / $r" | bc) MB/s drained by recman"
# The cluster's processes back to the root group, so the group can go (the EXIT trap stops them).
if [[ -e $CPU_GROUP/cgroup.procs ]]; then
    while read -r pid; do echo "$pid" >/sys/fs/cgroup/cpuacct/cgroup.procs 2>/dev/null || true; done <"$CPU_GROUP/cgroup.procs"
    rmdir "$CPU_GROUP" 2>/dev/null || true
fi
