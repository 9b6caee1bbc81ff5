#!/usr/bin/env bash
# Two or more recman builds against each other on one pgbench cluster, in one run: the same
# backup, restore and `validate database` (this one from a cold page cache) by each build,
# interleaved in an order that rotates from run to run, so that the machine's drift falls on
# all alike. Prints each run, the medians and each build's ratio to the first. Not a test: it
# prints figures (docs/performance.md, "between commits").
#
#   SCALE=20 RUNS=7 bench/ab.sh BIN_A BIN_B [BIN_C ...] [-- more `backup database` options]
#
# Each build has its own repository (a newer catalog schema is refused by an older build);
# the archive_command pushes every segment into each at once (in parallel, then waits for all),
# so no build's backup waits for another build's push: run one after the other, the second
# build's backups waited for the first's push too, about 40 ms more a backup at scale 1.
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SCALE=${SCALE:-20}
RUNS=${RUNS:-7}
BINS=()
while [[ $# -gt 0 && $1 != -- ]]; do
    BINS+=("$1")
    shift
done
[[ ${1:-} == -- ]] && shift
MORE=("$@")
[[ ${#BINS[@]} -ge 2 ]] || { echo "usage: bench/ab.sh BIN_A BIN_B [BIN_C ...] [-- backup options]" >&2; exit 2; }
[[ ${#MORE[@]} -gt 0 ]] || MORE=(--channels 2 --compress lz4)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /tmp/recman-ab.XXXXXX)
chown postgres: "$WORK"
NAMES=()
for i in "${!BINS[@]}"; do
    n=$(printf "\\x$(printf %x $((97 + i)))")
    NAMES+=("$n")
    cp "${BINS[$i]}" "$WORK/$n"
    echo "$n = ${BINS[$i]}"
done
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

as_pg "$PGBIN/initdb" -D "$WORK/pg" --data-checksums -U postgres >/dev/null 2>&1
PORT=$((20000 + RANDOM % 20000))
cat >>"$WORK/pg/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
archive_mode = on
archive_command = '$(for n in "${NAMES[@]}"; do printf '%s & p%s=$! ; ' "$WORK/$n --repo $WORK/r$n archive-push %p" "$n"; done)$(for n in "${NAMES[@]}"; do printf 'wait $p%s && ' "$n"; done)true'
max_wal_size = 4GB
checkpoint_timeout = 30min
autovacuum = off
shared_buffers = 256MB
CONF
CONN="host=$WORK port=$PORT user=postgres dbname=postgres"
for t in "${NAMES[@]}"; do
    as_pg "$WORK/$t" --repo "$WORK/r$t" create catalog >/dev/null
done
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s "$SCALE" -q postgres >/dev/null 2>&1
as_pg "$PGBIN/psql" -h "$WORK" -p "$PORT" -qAtX -c checkpoint postgres >/dev/null
for t in "${NAMES[@]}"; do
    as_pg "$WORK/$t" --repo "$WORK/r$t" --pgdata "$WORK/pg" --target "$CONN" register database --name main >/dev/null
done
MB=$(du -sm --exclude=pg_wal "$WORK/pg" | cut -f1)

# One timed command: prints wall seconds.
wall() {
    local TIMEFORMAT=%R out
    out=$({ time as_pg "$@" >/dev/null 2>"$WORK/err"; } 2>&1) || {
        cat "$WORK/err" >&2
        return 1
    }
    echo "$out"
}
one() { # build -> "backup restore validate"
    local t=$1 b r v
    b=$(wall "$WORK/$t" --repo "$WORK/r$t" --pgdata "$WORK/pg" --target "$CONN" backup database "${MORE[@]}")
    sync
    r=$(wall "$WORK/$t" --repo "$WORK/r$t" restore database --to "$WORK/restored")
    rm -rf "$WORK/restored"
    bench_cold
    v=$(wall "$WORK/$t" --pgdata "$WORK/pg" --target "$CONN" validate database)
    echo "$b $r $v"
}
for t in "${NAMES[@]}"; do one "$t" >/dev/null; : >"$WORK/r$t.txt"; done
echo "scale $SCALE ($MB MB without pg_wal), backup database ${MORE[*]}, $RUNS runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < RUNS; i++)); do
    k=${#NAMES[@]}
    order=()
    for ((j = 0; j < k; j++)); do order+=("${NAMES[$(((i + j) % k))]}"); done
    # every other run reversed too, so that builds follow different neighbours; with two
    # builds the rotation alone alternates them, and reversing it as well would undo that
    ((k > 2 && i % 2 == 1)) && order=($(printf '%s\n' "${order[@]}" | tac))
    for t in "${order[@]}"; do
        res=$(one "$t")
        echo "$res" >>"$WORK/r$t.txt"
        read -r b r v <<<"$res"
        echo "run $i $t: backup $b s, restore $r s, validate $v s"
    done
done
for col in 1 2 3; do
    name=$(echo backup restore validate | cut -d' ' -f$col)
    # shellcheck disable=SC2046 # one number a line
    ma=$(bench_median $(cut -d' ' -f$col "$WORK/ra.txt"))
    for t in "${NAMES[@]}"; do
        # shellcheck disable=SC2046
        m=$(bench_median $(cut -d' ' -f$col "$WORK/r$t.txt"))
        echo "$name $t: median $m s ($(echo "$MB / $m" | bc) MB/s), time / a's $(echo "scale=3; $m / $ma" | bc)"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
