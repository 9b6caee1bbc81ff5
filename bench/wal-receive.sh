#!/usr/bin/env bash
# The WAL receiver under load (issue 42, acceptance 6): `recman receive` streams from a
# primary running pgbench, and the bench reports
#   - its lag: every 100 ms from pg_stat_replication (PostgreSQL's write_lag and flush_lag,
#     how far write_lsn and flush_lsn are behind, and the age of each: how long ago the
#     primary's own position moved past it), and every 0.5 s the age of the position recman
#     recorded as durable in the repository (`report rpo`);
#   - its CPU: recman's (all its threads: the stream and the watcher) and, for a recman that
#     ran pg_receivewal as a child (before the stream of its own), the child's, from
#     /proc/PID/stat, per 10 MB/s of the WAL the primary wrote, and while idle;
#   - what sync mode costs a commit: the same pgbench with no synchronous standby, with
#     `recman receive --mode sync` named in synchronous_standby_names, and with a local
#     streaming standby (pg_basebackup -R) named there instead.
# The local standby and a receiver stream in every configuration; only the receiver's mode
# and whom the primary waits for change (see CONFIGS). Rounds rotate the order. Not a test:
# prints each run and the medians. Run as root; noisy on a shared host, so read the medians.
#
#   bench/wal-receive.sh [RECMAN_BINARY]
#   env: SCALE=10 CLIENTS=4 DURATION=60 RUNS=3 IDLE=10 (seconds of the receiver idle before
#        each measured run) FLUSH_INTERVAL=ms (the receiver's --flush-interval; default: recman's)
#        PGBIN=/usr/lib/postgresql/15/bin THROTTLE=READ:WRITE (as peers.sh) SAMPLES=DIR (keeps
#        each measured run's samples there: time, current, write and flush LSN, write_lag,
#        flush_lag; and the recorded position's)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath "${1:-$ROOT/target/release/recman}")
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-60}
RUNS=${RUNS:-3}
IDLE=${IDLE:-10}
FLUSH_INTERVAL=${FLUSH_INTERVAL:-}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
fail() { echo "wal-receive: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "run as root (runs PostgreSQL as postgres, may throttle the disk)"
[[ -x $BIN ]] || fail "no recman binary at $BIN; hint: cargo build --release -p recman-cli"
[[ -x $PGBIN/pgbench ]] ||
    fail "no pgbench in $PGBIN; hint: install postgresql-15 or set PGBIN"
for tool in jq bc; do
    command -v "$tool" >/dev/null || fail "$tool is not installed; hint: apt-get install $tool"
done
# Every run's WAL stays in the repository (pgbench wrote 3 MB/s here; 10 allows for a faster
# host), beside the two clusters' pg_wal (max_wal_size 4 GB each).
need=$((8192 + RUNS * 4 * DURATION * 10))
free=$(df -Pm /tmp | awk 'NR == 2 {print $4}')
((free >= need)) || fail "/tmp has ${free} MiB free, the run needs about ${need} MiB; hint: lower DURATION or RUNS"
# shellcheck source=bench/common.sh
source "$ROOT/bench/common.sh"
bench_pg_work wal-receive-bench
SB=$WORK/standby
SPORT=$((PORT + 1))
REPO=$WORK/repo
APP=recman_main
SLOT=recman_bench
SAMPLER=
RECV_PID=
# The EXIT trap stops the receiver, the samplers and the standby too, then what
# bench_pg_work's trap does.
end() {
    [[ -z $SAMPLER ]] || kill "$SAMPLER" 2>/dev/null || true
    receiver_stop
    as_pg "$PGBIN/pg_ctl" -D "$SB" -m immediate stop >/dev/null 2>&1 || true
    bench_pg_work_end
}
trap end EXIT
# Root connects as the postgres role (trust on the socket): the samplers' psql is then this
# shell's own child, which it can stop.
psql() { "$PGBIN/psql" -h "$WORK" -p "$PORT" -U postgres -qAtX -c "$1" postgres; }

as_pg "$PGBIN/initdb" -D "$PG" --data-checksums -A trust -U postgres >/dev/null
cat >>"$PG/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
max_wal_size = 4GB
checkpoint_timeout = 30min
CONF
as_pg "$PGBIN/pg_ctl" -D "$PG" -l "$WORK/pg.log" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s "$SCALE" -q postgres >/dev/null 2>&1 ||
    fail "pgbench -i failed; see $WORK/pg.log"
as_pg "$BIN" --repo "$REPO" create catalog >/dev/null
as_pg "$BIN" --repo "$REPO" --pgdata "$PG" --target "host=$WORK port=$PORT user=postgres dbname=postgres" \
    register database --name main >/dev/null
as_pg "$PGBIN/pg_basebackup" -h "$WORK" -p "$PORT" -U postgres -D "$SB" -R -X stream -c fast ||
    fail "pg_basebackup of the primary failed"
cat >>"$SB/postgresql.conf" <<CONF
port = $SPORT
cluster_name = 'local_standby'
CONF
as_pg "$PGBIN/pg_ctl" -D "$SB" -l "$WORK/standby.log" -w start >/dev/null

# receiver_start MODE: `recman receive` in MODE in the background; RECV_PID is recman's own
# process (runuser's child), waited for until the primary sees it streaming.
receiver_start() {
    # runuser itself in the background (not through as_pg), so $! is runuser and recman its child.
    runuser -u postgres -- "$BIN" --repo "$REPO" --db main \
        --target "host=$WORK port=$PORT user=postgres dbname=postgres" \
        receive --mode "$1" --slot "$SLOT" --create-slot ${FLUSH_INTERVAL:+--flush-interval "$FLUSH_INTERVAL"} \
        2>>"$WORK/receive.log" &
    local runner=$! i
    for ((i = 0; i < 100; i++)); do
        RECV_PID=$(pgrep -P "$runner" || true)
        [[ -n $RECV_PID ]] && break
        sleep 0.1
    done
    [[ -n $RECV_PID ]] || fail "recman receive did not start; see $WORK/receive.log"
    for ((i = 0; i < 300; i++)); do
        [[ $(psql "select count(*) from pg_stat_replication where application_name = '$APP' and state = 'streaming'") == 1 ]] && return 0
        sleep 0.1
    done
    fail "recman receive is not streaming after 30 s; see $WORK/receive.log"
}
receiver_stop() {
    [[ -n $RECV_PID ]] || return 0
    kill -TERM "$RECV_PID" 2>/dev/null || true
    while kill -0 "$RECV_PID" 2>/dev/null; do sleep 0.1; done
    RECV_PID=
}
# sync_standby NAME: makes the primary wait for NAME ('' for nobody); returns once NAME is
# the synchronous standby.
sync_standby() {
    psql "alter system set synchronous_standby_names = '$1'" >/dev/null
    psql "select pg_reload_conf()" >/dev/null
    [[ -z $1 ]] && return 0
    local i
    for ((i = 0; i < 300; i++)); do
        [[ $(psql "select count(*) from pg_stat_replication where application_name = '$1' and sync_state = 'sync'") == 1 ]] && return 0
        sleep 0.1
    done
    fail "$1 did not become the synchronous standby in 30 s"
}
# cpu_ticks PID: utime + stime of the process (its threads; not its children).
# No PID (no child): 0.
cpu_ticks() { if [[ -z $1 ]]; then echo 0; else awk '{print $14 + $15}' "/proc/$1/stat"; fi; }
lsn_now() { psql "select pg_current_wal_lsn() - '0/0'"; }
# pct P FILE: the P-th percentile (nearest rank) of the numbers in FILE, one a line.
pct() { sort -g "$2" | awk -v p="$1" '{a[NR] = $1} END {if (!NR) {print "-"; exit} i = int(p / 100 * NR + 0.999999); if (i < 1) i = 1; print a[i]}'; }
stats() { echo "p50 $(pct 50 "$1") p99 $(pct 99 "$1") max $(pct 100 "$1")"; }

# pgbench_run: the load, unthrottled; prints "LATENCY_MS TPS". Each run follows a checkpoint
# (the caller's, outside what it times), so each writes about as many full-page images:
# without it the WAL per transaction falls run by run as fewer pages need one.
pgbench_run() {
    as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -c "$CLIENTS" -j 2 -T "$DURATION" -n postgres >"$WORK/pgbench.out" 2>&1 ||
        fail "pgbench failed: $(tail -3 "$WORK/pgbench.out")"
    awk '/^latency average/ {l = $4} /^tps/ {t = $3} END {print l, t}' "$WORK/pgbench.out"
}

# measured_run N KEY: the receiver under pgbench, sampled; prints the figures of run N, adds
# them to the medians' arrays under KEY and leaves pgbench's in RES (not run in a subshell:
# the arrays must keep what it adds).
declare -A M
RES=
measured_run() {
    local n=$1 key=$2 rp wp t0 t1 l0 l1 c0 w0 c1 w1 out tick
    rp=$RECV_PID
    # A child pg_receivewal only under a recman from before its own stream.
    wp=$(pgrep -P "$rp" pg_receivewal || true)
    psql checkpoint >/dev/null
    # One psql re-runs the query every 100 ms (\watch), instead of a process each sample.
    "$PGBIN/psql" -h "$WORK" -p "$PORT" -U postgres -qAtX -F ' ' postgres >"$WORK/lag.txt" 2>/dev/null <<SQL &
select extract(epoch from clock_timestamp()), pg_current_wal_lsn() - '0/0',
       coalesce(r.write_lsn - '0/0', -1), coalesce(r.flush_lsn - '0/0', -1),
       coalesce(extract(epoch from r.write_lag), -1), coalesce(extract(epoch from r.flush_lag), -1)
from (select 1) one left join pg_stat_replication r on r.application_name = '$APP' \watch 0.1
SQL
    SAMPLER=$!
    (
        # What recman recorded as durable: one `report rpo` every half second.
        local at lsn
        while :; do
            lsn=$(as_pg "$BIN" --repo "$REPO" --db main --target "host=$WORK port=$PORT user=postgres dbname=postgres" \
                report rpo --json 2>/dev/null |
                jq -r '.[0].flushed_lsn // empty') || true
            # The time after the report, not before: an age too high, never too low.
            at=$(date +%s.%N)
            [[ $lsn == */* ]] && echo "$at $((16#${lsn%/*} * 4294967296 + 16#${lsn#*/}))"
            sleep 0.5
        done
    ) >"$WORK/rpo.txt" &
    local rpo_loop=$!
    # Some seconds idle before the load: the positions the receiver names early in the run were
    # then reached while sampled, and the CPU the two take with no WAL to receive (the
    # watcher's ticks, the status messages) is measured apart.
    local i0 i1 iw0 iw1 ta tb
    ta=$(date +%s.%N)
    i0=$(cpu_ticks "$rp")
    iw0=$(cpu_ticks "$wp")
    sleep "$IDLE"
    i1=$(cpu_ticks "$rp")
    iw1=$(cpu_ticks "$wp")
    tb=$(date +%s.%N)
    l0=$(lsn_now)
    c0=$(cpu_ticks "$rp")
    w0=$(cpu_ticks "$wp")
    t0=$(date +%s.%N)
    out=$(pgbench_run)
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$rp")
    w1=$(cpu_ticks "$wp") || fail "pg_receivewal ($wp) exited during the run; see $WORK/receive.log"
    [[ -n $wp ]] || kill -0 "$rp" || fail "recman receive ($rp) exited during the run; see $WORK/receive.log"
    l1=$(lsn_now)
    kill "$rpo_loop" "$SAMPLER" 2>/dev/null || true
    wait "$rpo_loop" "$SAMPLER" 2>/dev/null || true
    SAMPLER=
    tick=$(getconf CLK_TCK)
    local secs mbps rate wc rc f
    secs=$(echo "$t1 - $t0" | bc)
    mbps=$(echo "scale=2; ($l1 - $l0) / 1000000 / $secs" | bc)
    rate=$(echo "scale=4; $mbps / 10" | bc) # units of 10 MB/s
    wc=$(echo "scale=4; ($c1 - $c0) / $tick / $secs / $rate" | bc)
    rc=$(echo "scale=4; ($w1 - $w0) / $tick / $secs / $rate" | bc)
    # lag.txt: time, current, write, flush, write_lag, flush_lag (-1: not streaming, or NULL);
    # \watch may separate its outputs with empty lines. The figures are those of the samples
    # taken while pgbench ran (win.txt); all of them are the primary's history.
    awk 'NF == 6' "$WORK/lag.txt" >"$WORK/lag.num"
    mv "$WORK/lag.num" "$WORK/lag.txt"
    awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b && $3 >= 0' "$WORK/lag.txt" >"$WORK/win.txt"
    awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b' "$WORK/rpo.txt" >"$WORK/rpo.win"
    awk '$5 >= 0 {print $5}' "$WORK/win.txt" >"$WORK/wlag"
    awk '$6 >= 0 {print $6}' "$WORK/win.txt" >"$WORK/flag"
    awk '{printf "%.3f\n", ($2 - $4) / 1048576}' "$WORK/win.txt" >"$WORK/fbytes"
    awk '{printf "%.3f\n", ($2 - $3) / 1048576}' "$WORK/win.txt" >"$WORK/wbytes"
    # poslag COLUMN FILE: for each line of FILE (time, then the LSN in COLUMN), how long before
    # it the primary's own position moved past that LSN (0 when it had not), interpolated
    # between the 100 ms samples of pg_current_wal_lsn: the age of the oldest WAL the
    # position leaves out. Both only grow, so one pointer walks the history forwards. An LSN
    # the primary had passed before the first sample counts from the first sample (a lower
    # bound; their number goes to FILE.early).
    poslag() {
        awk -v col="$1" -v early="$2.early" '
            FNR == NR {t[NR] = $1; c[NR] = $2; n = NR; next}
            {
                at = $1; lsn = $col
                while (j < n && c[j + 1] <= lsn) j++
                # The primary had written nothing past it: no lag.
                if (j + 1 > n) { print 0; next }
                if (j < 1) { e++; printf "%.3f\n", at - t[1]; next }
                when = t[j] + (t[j + 1] - t[j]) * (lsn - c[j]) / (c[j + 1] - c[j] > 0 ? c[j + 1] - c[j] : 1)
                printf "%.3f\n", (at - when > 0 ? at - when : 0)
            }
            END { print e + 0 > early }' "$WORK/lag.txt" "$2"
    }
    poslag 3 "$WORK/win.txt" >"$WORK/wpos"
    poslag 4 "$WORK/win.txt" >"$WORK/fpos"
    poslag 2 "$WORK/rpo.win" >"$WORK/rpos"
    early() { local e; e=$(cat "$1.early"); ((e == 0)) || echo " ($e of them ≥, older than the sampling)"; }
    echo "  run $n $key, $(wc -l <"$WORK/win.txt") samples, WAL $mbps MB/s over ${secs%.*} s"
    echo "    pg_stat_replication flush_lag s: $(stats "$WORK/flag"); write_lag s: $(stats "$WORK/wlag")"
    echo "    flush_lsn behind, MiB: $(stats "$WORK/fbytes"); write_lsn behind, MiB: $(stats "$WORK/wbytes")"
    echo "    age of flush_lsn s: $(stats "$WORK/fpos")$(early "$WORK/win.txt")"
    echo "    age of write_lsn s: $(stats "$WORK/wpos")"
    echo "    age of the position recorded in the repository s: $(stats "$WORK/rpos") ($(wc -l <"$WORK/rpos") samples)$(early "$WORK/rpo.win")"
    echo "    CPU cores per 10 MB/s of WAL: recman $wc, child pg_receivewal $rc, both $(echo "scale=4; $wc + $rc" | bc)"
    local idle_s
    idle_s=$(echo "$tb - $ta" | bc)
    echo "    CPU cores while idle (${IDLE}s before the load, no WAL): recman $(echo "scale=4; ($i1 - $i0) / $tick / $idle_s" | bc), child pg_receivewal $(echo "scale=4; ($iw1 - $iw0) / $tick / $idle_s" | bc)"
    M[$key:idle_recman]+="$(echo "scale=4; ($i1 - $i0) / $tick / $idle_s" | bc) "
    if [[ -n ${SAMPLES:-} ]]; then
        mkdir -p "$SAMPLES"
        cp "$WORK/lag.txt" "$SAMPLES/run$n-$key-lag.txt"
        cp "$WORK/rpo.txt" "$SAMPLES/run$n-$key-rpo.txt"
        echo "$t0 $t1" >"$SAMPLES/run$n-$key-window.txt"
    fi
    for f in flag wlag fpos wpos rpos; do
        M[$key:${f}50]+="$(pct 50 "$WORK/$f") "
        M[$key:${f}99]+="$(pct 99 "$WORK/$f") "
        M[$key:${f}max]+="$(pct 100 "$WORK/$f") "
    done
    M[$key:fbytes99]+="$(pct 99 "$WORK/fbytes") "
    M[$key:mbps]+="$mbps "
    M[$key:cpu_recman]+="$wc "
    M[$key:cpu_recv]+="$rc "
    M[$key:cpu_both]+="$(echo "scale=4; $wc + $rc" | bc) "
    RES=$out
}

echo "wal receive: pgbench scale $SCALE, -c $CLIENTS, ${DURATION}s a run, flush interval ${FLUSH_INTERVAL:-default} ms, $(nproc) cores, $($BIN --version 2>/dev/null), PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), ${THROTTLE:+throttle $THROTTLE, }$(date -u +%FT%TZ)"
declare -A LAT TPS R RATIO
# none: the async receiver, nothing synchronous (its lag and CPU are measured); recman-sync:
# the receiver in sync mode, named in synchronous_standby_names; standby-sync: the local
# standby named there, the receiver async; sync-unnamed: the receiver in sync mode (fsync and
# report at each write) but not waited for, measured like none: what sync mode does to the lag
# and the CPU when no commit waits for it.
CONFIGS=(none recman-sync standby-sync sync-unnamed)
nc=${#CONFIGS[@]}
for ((run = 1; run <= RUNS; run++)); do
    for ((k = 0; k < nc; k++)); do
        cfg=${CONFIGS[$(((k + run - 1) % nc))]}
        case $cfg in
        none)
            receiver_start async
            sync_standby ''
            measured_run "$run" async
            res=$RES
            ;;
        recman-sync)
            receiver_start sync
            sync_standby "$APP"
            psql checkpoint >/dev/null
            res=$(pgbench_run)
            ;;
        standby-sync)
            receiver_start async
            sync_standby local_standby
            psql checkpoint >/dev/null
            res=$(pgbench_run)
            ;;
        sync-unnamed)
            receiver_start sync
            sync_standby ''
            measured_run "$run" sync
            res=$RES
            ;;
        esac
        receiver_stop
        sync_standby ''
        read -r lat tps <<<"$res"
        LAT[$cfg]+="$lat "
        TPS[$cfg]+="$tps "
        R[$cfg]=$lat
        echo "  run $run $cfg: latency ${lat} ms, ${tps} tps"
    done
    # The ratios within a round too: the host's other load drifts between rounds, and moves
    # a round's configurations together more than it moves one round against another.
    RATIO[rs]+="$(echo "scale=3; ${R[recman-sync]} / ${R[standby-sync]}" | bc) "
    RATIO[rn]+="$(echo "scale=3; ${R[recman-sync]} / ${R[none]}" | bc) "
    RATIO[sn]+="$(echo "scale=3; ${R[standby-sync]} / ${R[none]}" | bc) "
done
# shellcheck disable=SC2086
{
    for key in async sync; do
        med() { bench_median ${M[$key:$1]}; }
        m3() { echo "p50 $(med "${1}50") p99 $(med "${1}99") max $(med "${1}max")"; }
        echo "median lag (s) of the receiver in $key mode, no commit waiting for it:"
        echo "  pg_stat_replication flush_lag $(m3 flag); write_lag $(m3 wlag)"
        echo "  age of flush_lsn $(m3 fpos) (flush_lsn behind p99 $(med fbytes99) MiB); age of write_lsn $(m3 wpos)"
        echo "  age of the position recorded in the repository $(m3 rpos) (target: p99 < 1)"
        echo "  CPU cores per 10 MB/s of WAL ($(med mbps) MB/s): recman $(med cpu_recman), child pg_receivewal $(med cpu_recv), both $(med cpu_both) (target < 0.1); recman idle $(med idle_recman) cores"
    done
    n=$(bench_median ${LAT[none]})
    r=$(bench_median ${LAT[recman-sync]})
    s=$(bench_median ${LAT[standby-sync]})
    u=$(bench_median ${LAT[sync-unnamed]})
    echo "median latency (ms): none $n ($(bench_median ${TPS[none]}) tps), recman sync $r ($(bench_median ${TPS[recman-sync]}) tps), local standby sync $s ($(bench_median ${TPS[standby-sync]}) tps), recman sync not waited for $u ($(bench_median ${TPS[sync-unnamed]}) tps)"
    echo "latency ratios of the medians: recman sync / local standby $(echo "scale=2; $r / $s" | bc), recman sync / none $(echo "scale=2; $r / $n" | bc), local standby / none $(echo "scale=2; $s / $n" | bc)"
    echo "median of each round's ratio: recman sync / local standby $(bench_median ${RATIO[rs]}) (${RATIO[rs]% }), recman sync / none $(bench_median ${RATIO[rn]}) (${RATIO[rn]% }), local standby / none $(bench_median ${RATIO[sn]}) (${RATIO[sn]% })"
}
