#!/usr/bin/env bash
# The cost of encryption at rest (issue 16): the same lz4 backup, restore --validate and
# restore --to of one pgbench cluster into a plain repository and into encrypted ones, RUNS
# times each, and the ratios to plain of the medians and of the least CPU times. Not a timed
# test: it prints figures (docs/security.md#cost).
#
#   bench/encryption.sh [SCALE] [RUNS]      (RECMAN_BIN: the recman to measure; default
#                                            target/release/recman, else target/debug/recman)
#
# Two encrypted repositories: one opened with a passphrase (every process derives the master
# key with Argon2id once, a fixed cost) and one with a key file of 64 hex digits (no
# derivation: what remains is the cost per byte, AES-256-GCM). `list backup`, which reads no
# sealed object, shows the fixed cost of opening the repository.
#
# The machine may be shared: each run measures the three kinds back to back, in an order that
# rotates from run to run, so a neighbour's load falls on all alike; and each command's CPU
# time (user + system, all its threads) is printed beside its wall time, since a neighbour
# stretches the wall time and hardly the CPU time.
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

echo "bench passphrase" >"$WORK/passphrase.key"
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$WORK/hex.key"
chown postgres: "$WORK"/*.key
chmod 600 "$WORK"/*.key

as_pg "$PGBIN/initdb" -D "$WORK/pg" --data-checksums >/dev/null
PORT=$((20000 + RANDOM % 20000))
# WAL goes to the repository being measured, through the symbolic link $WORK/cur, with the
# key that opens it, through $WORK/cur.key (a plain repository asks for no key).
cat >>"$WORK/pg/postgresql.conf" <<CONF
archive_mode = on
archive_command = '$BIN --repo $WORK/cur --key-file $WORK/cur.key archive-push %p'
CONF
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -o "-p $PORT -k $WORK -c listen_addresses=''" -w start >/dev/null
as_pg "$PGBIN/pgbench" -h "$WORK" -p "$PORT" -i -s "$SCALE" -q postgres >/dev/null 2>&1
CONN="host=$WORK port=$PORT user=postgres dbname=postgres"
SIZE=$(du -sm "$WORK/pg" | cut -f1)

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Runs recman as postgres with the key of kind $1; prints "wall,cpu" seconds.
timed() {
    local kind=$1 TIMEFORMAT='%R %U %S' out w u s
    shift
    local key=()
    [ "$kind" = keyfile ] && key=(--key-file "$WORK/hex.key")
    out=$({ time as_pg "$BIN" "${key[@]}" "$@" >/dev/null 2>"$WORK/err"; } 2>&1) || {
        cat "$WORK/err" >&2
        return 1
    }
    read -r w u s <<<"$out"
    echo "$w,$(echo "$u + $s" | bc)"
}

# One run of one kind (plain, passphrase or keyfile): prints "backup validate restore open",
# each "wall,cpu" seconds.
run() {
    local kind=$1 repo=$WORK/repo-$1-$2 b v r o enc=()
    [ "$kind" = plain ] || enc=(--encrypt)
    timed "$kind" --repo "$repo" -q create catalog "${enc[@]}" >/dev/null
    timed "$kind" --repo "$repo" --pgdata "$WORK/pg" --target "$CONN" -q register database --name main >/dev/null
    ln -sfn "$repo" "$WORK/cur"
    if [ "$kind" = keyfile ]; then ln -sfn hex.key "$WORK/cur.key"; else ln -sfn passphrase.key "$WORK/cur.key"; fi
    b=$(timed "$kind" --repo "$repo" --pgdata "$WORK/pg" --target "$CONN" -q backup database --compress lz4)
    sync
    v=$(timed "$kind" --repo "$repo" -q restore database --validate)
    r=$(timed "$kind" --repo "$repo" -q restore database --to "$WORK/restored")
    rm -rf "$WORK/restored"
    o=$(timed "$kind" --repo "$repo" -q list backup)
    rm -rf "$repo"
    echo "$b $v $r $o"
}

# A first, unmeasured backup takes the WAL of pgbench's load into the archive and warms the
# page cache, so that no measured run pays for either.
run plain 0 >/dev/null

KINDS=(plain passphrase keyfile)
declare -A col
for i in $(seq "$RUNS"); do
    for j in 0 1 2; do
        kind=${KINDS[$(((i + j) % 3))]}
        read -r b v r o <<<"$(run "$kind" "$i")"
        col[$kind-backup]+="$b "
        col[$kind-validate]+="$v "
        col[$kind-restore]+="$r "
        col[$kind-open]+="$o "
        echo "run $i $kind (wall,cpu s): backup $b, restore --validate $v, restore --to $r, list backup $o" >&2
    done
done

# Column $2 (1 wall, 2 cpu) of the runs of $1: the median, or with $3 = min the least (the
# run least disturbed by a neighbour).
med() {
    if [ "${3:-}" = min ]; then
        printf '%s\n' ${col[$1]} | cut -d, -f"$2" | sort -n | head -1
    else
        printf '%s\n' ${col[$1]} | cut -d, -f"$2" | median
    fi
}
echo "scale $SCALE ($SIZE MiB), $RUNS runs of each kind (interleaved), $BIN"
echo "seconds (median of the runs; cpu min: the least); ratio to plain (difference)"
printf '%-28s %7s %24s %24s\n' "" plain "passphrase" "key file"
for what in backup validate restore open; do
    case $what in
    backup) label="lz4 backup" ;;
    validate) label="restore --validate" ;;
    restore) label="restore --to" ;;
    open) label="list backup" ;;
    esac
    for c in "1 wall" "2 cpu" "2 min"; do
        read -r n k <<<"$c"
        p=$(med "plain-$what" "$n" "$k")
        line=$(printf '%-20s %-7s %7.3f' "$label" "$([ "$k" = min ] && echo "cpu min" || echo "$k")" "$p")
        for kind in passphrase keyfile; do
            e=$(med "$kind-$what" "$n" "$k")
            line+=$(printf ' %7.3f %5.3f (%+.3f)' "$e" "$(echo "$e / $p" | bc -l)" "$(echo "$e - $p" | bc -l)")
        done
        echo "$line"
    done
done
