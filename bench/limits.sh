#!/usr/bin/env bash
# The speed targets of issue 15 that hold recman's default settings to a physical limit:
# a compressed full backup and `validate database` against fio's direct read of the cluster's
# base/, an uncompressed backup against fio's copy (base/ read while a file of the same size
# is written). Each recman run sits between two fio runs of its limit, and its ratio is to
# their mean: this machine's virtual disk drifts by a factor of 1.5 within minutes, and a limit
# taken once per round shifts every ratio with it. Scenarios: free (the disk as it is), read
# (a cgroup v1 blkio read throttle on recman and fio alike) and write (a write throttle). A
# throttle is a limit that holds still, so its ratios are the steady ones. Cold cache before
# every run. Prints a table; asserts nothing. Run as root (cgroups, drop_caches).
#
#   bench/limits.sh [RECMAN_BINARY]
#   env: SCALE=100 RUNS=3 SCENARIOS="free read write" READ_BPS=200M WRITE_BPS=100M
#        COMPRESS=lz4 PGBIN WORK OUT=bench/results/limits.md
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath "${1:-$ROOT/target/release/recman}")
SCALE=${SCALE:-100}
RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-free read write}
READ_BPS=${READ_BPS:-200M}
WRITE_BPS=${WRITE_BPS:-100M}
COMPRESS=${COMPRESS:-lz4}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
OUT=${OUT:-$ROOT/bench/results/limits.md}
PORT=${PORT:-55942}
fail() { echo "limits: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "run as root (cgroups, drop_caches)"
[[ -x $BIN ]] || fail "no recman binary at $BIN; hint: cargo build --release"
command -v fio >/dev/null || fail "fio is not installed; hint: apt-get install fio"
CG=/sys/fs/cgroup/blkio
[[ -e $CG/blkio.throttle.read_bps_device ]] || fail "no cgroup v1 blkio controller at $CG"
WORK=${WORK:-$(mktemp -d /tmp/recman-limits.XXXXXX)}
chmod 755 "$WORK"
chown postgres "$WORK"
CELL=$CG/recman-limits-$$
PG=$WORK/pg
stop_all() {
    su postgres -s /bin/bash -c "$PGBIN/pg_ctl -D $PG -m immediate stop" >/dev/null 2>&1 || true
    rmdir "$CELL" 2>/dev/null || true
    rm -rf "$WORK"
}
trap stop_all EXIT
DEV=$(stat -c '%Hd:%Ld' "$WORK")

# in_cell CMD...: CMD as postgres inside the scenario's cgroup.
in_cell() { su postgres -s /bin/bash -c "echo \$\$ > $CELL/cgroup.procs && exec $*"; }
recman() { in_cell "$BIN --repo $WORK/repo --pgdata $PG --target 'host=$WORK port=$PORT user=postgres dbname=postgres' $*"; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
mbs() { echo "scale=1; $1 / 1000000 / $2" | bc; }
# seconds CMD...: runs CMD from a cold cache, prints its wall seconds.
seconds() {
    local t0 t1
    cold
    t0=$(date +%s.%N)
    "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; fail "failed: $*"; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
# The limits, in MB/s of database bytes. fio reads whole MiBs only, so its rate is of the
# bytes it moved.
fio_rate() { # json-file direction(s)...: the slowest of the named directions' MB/s
    python3 - "$@" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
rates = [sum(j[k]["bw_bytes"] for j in d["jobs"]) / 1e6 for k in sys.argv[2:]]
print("%.1f" % min(rates))
EOF
}
read_limit() {
    cold
    in_cell fio --name=db --opendir="$PG/base" --file_service_type=sequential --readonly --rw=read --bs=1m \
        --iodepth=16 --direct=1 --ioengine=io_uring --output-format=json --output="$WORK/fio.json" >/dev/null 2>&1 ||
        fail "fio read of $PG/base failed"
    fio_rate "$WORK/fio.json" read
}
copy_limit() {
    cold
    in_cell fio --ioengine=io_uring --direct=1 --bs=1m --iodepth=16 --output-format=json --output="$WORK/fio.json" \
        --name=in --opendir="$PG/base" --file_service_type=sequential --rw=read \
        --name=out --filename="$WORK/copy.dat" --size="$DB" --rw=write --end_fsync=1 >/dev/null 2>&1 ||
        fail "fio copy of $PG/base failed"
    rm -f "$WORK/copy.dat"
    # (no --readonly: fio takes it for every job.) Each job's own rate: the copy is as fast
    # as its slower side.
    python3 - "$WORK/fio.json" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
r = next(j["read"]["bw_bytes"] for j in d["jobs"] if j["jobname"] == "in")
w = next(j["write"]["bw_bytes"] for j in d["jobs"] if j["jobname"] == "out")
print("%.1f" % (min(r, w) / 1e6))
EOF
}

su postgres -s /bin/bash -c "$PGBIN/initdb -D $PG --data-checksums -A trust" >/dev/null
cat >>"$PG/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
archive_mode = on
archive_command = '$BIN --repo $WORK/repo archive-push %p'
autovacuum = off
max_wal_size = 4GB
checkpoint_timeout = 30min
CONF
su postgres -s /bin/bash -c "$PGBIN/pg_ctl -D $PG -l $WORK/pg.log -w start" >/dev/null
su postgres -s /bin/bash -c "$PGBIN/pgbench -q -i -s $SCALE -h $WORK -p $PORT postgres" >/dev/null 2>&1
su postgres -s /bin/bash -c "$PGBIN/psql -qAtX -h $WORK -p $PORT -c checkpoint postgres"
DB=$(du -sb --exclude=pg_wal "$PG" | cut -f1)
mkdir "$CELL"
chmod 666 "$CELL/cgroup.procs"
su postgres -s /bin/bash -c "$BIN --repo $WORK/repo create catalog" >/dev/null
recman register database --name main >/dev/null
head="limits: pgbench scale $SCALE, $((DB / 1000000)) MB without pg_wal, disk $DEV, $(nproc) cores, $($BIN --version 2>/dev/null || echo recman), $(date -u +%FT%TZ)"
echo "$head"
mkdir -p "$(dirname "$OUT")"
{
    echo "$head"
    echo
    echo "| scenario | run | recman (defaults) | MB/s | limit before / after, MB/s | ÷ limit |"
    echo "|---|---|---|---|---|---|"
} >>"$OUT"

# measure SCENARIO RUN LIMIT-FN LABEL CMD...: LIMIT-FN, CMD, LIMIT-FN; one table row.
measure() {
    local scenario=$1 run=$2 limit=$3 label=$4 before s after rate ratio
    shift 4
    before=$($limit)
    s=$(seconds "$@")
    after=$($limit)
    rate=$(mbs "$DB" "$s")
    ratio=$(echo "scale=2; 2 * $rate / ($before + $after)" | bc)
    echo "  $scenario $run $label: ${s}s, $rate MB/s, limit $before / $after MB/s, ratio $ratio"
    echo "| $scenario | $run | $label | $rate | $before / $after | $ratio |" >>"$OUT"
}

for scenario in $SCENARIOS; do
    echo >"$CELL/blkio.throttle.read_bps_device" "$DEV 0" 2>/dev/null || true
    echo >"$CELL/blkio.throttle.write_bps_device" "$DEV 0" 2>/dev/null || true
    case $scenario in
    free) ;;
    read) echo "$DEV $(numfmt --from=iec "$READ_BPS")" >"$CELL/blkio.throttle.read_bps_device" ;;
    write) echo "$DEV $(numfmt --from=iec "$WRITE_BPS")" >"$CELL/blkio.throttle.write_bps_device" ;;
    *) fail "unknown scenario $scenario (free, read, write)" ;;
    esac
    for ((run = 1; run <= RUNS; run++)); do
        # Only the backups' own bytes are written: each backup goes once it is timed.
        if [[ $scenario != write ]]; then
            measure "$scenario" "$run" read_limit "backup --compress $COMPRESS" \
                recman backup database --compress "$COMPRESS" --tag "l$run$scenario" -q
            recman delete backup "L$run${scenario^^}" --noprompt >/dev/null
            measure "$scenario" "$run" read_limit "validate database" recman validate database -q
        fi
        if [[ $scenario != read ]]; then
            measure "$scenario" "$run" copy_limit "backup (no compression)" \
                recman backup database --tag "n$run$scenario" -q
            recman delete backup "N$run${scenario^^}" --noprompt >/dev/null
        fi
    done
done
echo "limits: rows appended to $OUT"
