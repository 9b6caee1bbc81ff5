#!/usr/bin/env bash
# The cost of encryption at rest (issue 16): the same lz4 backup and restore of one pgbench
# cluster into a plain and an encrypted repository, RUNS times each, and the ratio of the
# medians. Not a timed test: it prints figures.
#
#   bench/encryption.sh [SCALE] [RUNS]      (RECMAN_BIN: the recman to measure; default
#                                            target/release/recman, else target/debug/recman)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCALE=${1:-10}
RUNS=${2:-3}
BIN=${RECMAN_BIN:-$ROOT/target/release/recman}
[ -x "$BIN" ] || BIN=$ROOT/target/debug/recman
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /tmp/recman-enc-bench.XXXXXX)
chown postgres: "$WORK"
as_pg() { runuser -u postgres -- env RECMAN_PASSPHRASE="bench passphrase" "$@"; }
cleanup() { as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

as_pg "$PGBIN/initdb" -D "$WORK/pg" --data-checksums >/dev/null
PORT=$((20000 + RANDOM % 20000))
# WAL goes to the repository being measured, through the symbolic link $WORK/cur.
cat >>"$WORK/pg/postgresql.conf" <<CONF
archive_mode = on
archive_command = '$BIN --repo $WORK/cur archive-push %p'
CONF
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -o "-p $PORT -k $WORK -c listen_addresses=''" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s "$SCALE" -q postgres >/dev/null 2>&1
CONN="host=$WORK port=$PORT user=postgres dbname=postgres"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }

measure() { # $1 = plain|encrypted
    local kind=$1 b=() r=() i repo t0 t1 t2
    for i in $(seq "$RUNS"); do
        repo=$WORK/repo-$kind-$i
        if [ "$kind" = encrypted ]; then
            as_pg "$BIN" --repo "$repo" -q create catalog --encrypt
        else
            as_pg "$BIN" --repo "$repo" -q create catalog
        fi
        as_pg "$BIN" --repo "$repo" --pgdata "$WORK/pg" --target "$CONN" -q register database --name main
        ln -sfn "$repo" "$WORK/cur"
        t0=$(now)
        as_pg "$BIN" --repo "$repo" --pgdata "$WORK/pg" --target "$CONN" -q backup database --compress lz4
        t1=$(now)
        as_pg "$BIN" --repo "$repo" -q restore database --validate
        t2=$(now)
        b+=("$(echo "$t1 - $t0" | bc)")
        r+=("$(echo "$t2 - $t1" | bc)")
        rm -rf "$repo"
    done
    echo "$kind $(printf '%s\n' "${b[@]}" | median) $(printf '%s\n' "${r[@]}" | median)"
}

P=$(measure plain)
E=$(measure encrypted)
read -r _ pb pr <<<"$P"
read -r _ eb er <<<"$E"
echo "scale $SCALE, $RUNS runs, $BIN"
printf 'lz4 backup:            plain %6.2f s  encrypted %6.2f s  ratio %.3f\n' "$pb" "$eb" "$(echo "$eb / $pb" | bc -l)"
printf 'restore --validate:    plain %6.2f s  encrypted %6.2f s  ratio %.3f\n' "$pr" "$er" "$(echo "$er / $pr" | bc -l)"
