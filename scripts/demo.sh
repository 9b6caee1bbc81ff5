#!/usr/bin/env bash
# End-to-end demo of recman's main job on a throwaway PostgreSQL 15 cluster:
# catalog, register, backup on 2 channels, list, validate, restore into a new
# data dir, start the restored copy and prove its data matches the source.
#
# Usage: sudo scripts/demo.sh        (KEEP=1 keeps the work dir and logs)
# Runs as root (PostgreSQL and recman then run as the postgres OS user, as
# PostgreSQL refuses root) or as an ordinary user (everything runs as you).

set -euo pipefail
# Root is needed (packages, clusters run as the postgres OS user): a user with sudo is taken
# there; a root shell, which may have no sudo, runs on as it is.
if [[ $EUID -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
    exec sudo -E "$0" "$@"
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh"

PGBIN=/usr/lib/postgresql/15/bin
RECOVERY_TIMEOUT_S=${RECOVERY_TIMEOUT_S:-300}

log() { printf '\n== %s\n' "$*"; }
die() {
    printf '\nDEMO FAILED: %s\n' "$*" >&2
    exit 1
}

if [[ $EUID -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "no postgres OS user (is postgresql-15 installed?)"
    AS_PG=(runuser -u postgres --)
else
    AS_PG=()
fi
pg() { "${AS_PG[@]}" "$@"; }

# PostgreSQL programs call getcwd(); a cwd under /root would be closed to
# postgres. Every path below is absolute.
cd /

WORK=$(mktemp -d /tmp/recman-demo.XXXXXX)
chmod 0700 "$WORK"
if [[ $EUID -eq 0 ]]; then
    chown postgres:postgres "$WORK"
fi
SRC=$WORK/source
DST=$WORK/restored
REPO=$WORK/repo
SOCK1=$WORK/sock1
SOCK2=$WORK/sock2
pg mkdir "$SOCK1" "$SOCK2" "$WORK/bin"

# The checkout (say /home/you/recman, mode 0700 on Debian 12) may be closed
# to postgres; a copy inside the work dir never is.
RECMAN=$WORK/bin/recman
cp "$ROOT/target/release/recman" "$RECMAN"
chmod 0755 "$RECMAN"

cleanup() {
    local rc=$?
    set +e
    for d in "$DST" "$SRC"; do
        if [[ -f $d/postmaster.pid ]]; then
            pg "$PGBIN/pg_ctl" -D "$d" -m fast -w -t 60 stop >/dev/null 2>&1 ||
                pg "$PGBIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
        fi
    done
    if [[ $rc -ne 0 ]]; then
        for f in "$WORK/source.log" "$WORK/restored.log"; do
            [[ -f $f ]] && printf '\n--- last lines of %s ---\n' "$f" >&2 && tail -n 30 "$f" >&2
        done
    fi
    if [[ ${KEEP:-0} == 1 ]]; then
        printf '\nKEEP=1: work dir kept at %s\n' "$WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Clusters listen on no TCP address, but a port still names the socket; pick
# ports nothing answers on so the demo never looks like it talks to another
# server.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
next_free_port() {
    local p=$1
    while port_busy "$p"; do p=$((p + 1)); done
    echo "$p"
}
PORT1=$(next_free_port 55432)
PORT2=$(next_free_port $((PORT1 + 1)))

# Shows a recman command with short names, then runs it as postgres.
recman() {
    local shown=recman arg
    for arg in "$@"; do
        if [[ $arg == *[[:space:]]* ]]; then shown+=" \"$arg\""; else shown+=" $arg"; fi
    done
    printf '\n$ %s\n' "$shown"
    pg "$RECMAN" "$@" || die "this recman command failed (exit $?): $shown"
}

sql() { # port sockdir sql
    pg "$PGBIN/psql" -XAtq -v ON_ERROR_STOP=1 -h "$2" -p "$1" -U postgres -d postgres -c "$3"
}

log "work dir $WORK, source cluster on port $PORT1, restore on port $PORT2"

log "initdb --data-checksums $SRC"
pg "$PGBIN/initdb" -D "$SRC" --data-checksums --auth=trust -U postgres \
    --encoding=UTF8 --locale=C --no-instructions >/dev/null
cat >>"$SRC/postgresql.conf" <<EOF

# --- recman demo ---
listen_addresses = ''
port = $PORT1
unix_socket_directories = '$SOCK1'
wal_level = replica
archive_mode = on
archive_command = '"$RECMAN" --repo "$REPO" archive-push %p'
EOF

log "starting source cluster"
pg "$PGBIN/pg_ctl" -D "$SRC" -l "$WORK/source.log" -w -t 120 start >/dev/null
TARGET="host=$SOCK1 port=$PORT1 user=postgres dbname=postgres"

# The catalog comes first so archive-push has a repository from the first
# finished WAL segment on.
recman --repo "$REPO" create catalog

log "pgbench -i -s 10, then 5 s of pgbench traffic so balances are not all zero"
pg env PGOPTIONS='-c client_min_messages=warning' \
    "$PGBIN/pgbench" -h "$SOCK1" -p "$PORT1" -U postgres -i -s 10 -q postgres
pg "$PGBIN/pgbench" -h "$SOCK1" -p "$PORT1" -U postgres -n -T 5 -c 2 postgres | sed -n '/^tps/p'

recman --repo "$REPO" --pgdata "$SRC" --target "$TARGET" register database --name demo
recman --repo "$REPO" --pgdata "$SRC" --target "$TARGET" backup database --channels 2 --compress lz4 --tag DEMO
recman --repo "$REPO" list backup
recman --repo "$REPO" --pgdata "$SRC" validate database
recman --repo "$REPO" validate backup DEMO
recman --repo "$REPO" restore database --to "$DST"

[[ -f $DST/PG_VERSION ]] || die "restore left no data directory at $DST"

log "starting restored cluster on port $PORT2"
# The restored config still names the source's port and socket dir: override
# both on the command line. archive_mode=off keeps this copy from archiving
# a new timeline into the demo's repository.
pg "$PGBIN/pg_ctl" -D "$DST" -l "$WORK/restored.log" -w -t "$RECOVERY_TIMEOUT_S" \
    -o "-p $PORT2 -c unix_socket_directories='$SOCK2' -c listen_addresses='' -c archive_mode=off" \
    start >/dev/null

deadline=$((SECONDS + RECOVERY_TIMEOUT_S))
until pg "$PGBIN/pg_isready" -q -h "$SOCK2" -p "$PORT2"; do
    ((SECONDS < deadline)) || die "restored cluster not accepting connections after ${RECOVERY_TIMEOUT_S}s"
    sleep 1
done
until [[ $(sql "$PORT2" "$SOCK2" 'select pg_is_in_recovery()' 2>/dev/null || true) == f ]]; do
    ((SECONDS < deadline)) || die "restored cluster still in recovery after ${RECOVERY_TIMEOUT_S}s"
    sleep 1
done
echo "recovery finished"

log "comparing source and restored data"
QUERY="select 'pgbench_accounts', count(*), coalesce(sum(abalance), 0) from pgbench_accounts
 union all select 'pgbench_branches', count(*), coalesce(sum(bbalance), 0) from pgbench_branches
 union all select 'pgbench_tellers', count(*), coalesce(sum(tbalance), 0) from pgbench_tellers
 union all select 'pgbench_history', count(*), coalesce(sum(delta), 0) from pgbench_history"
source_result=$(sql "$PORT1" "$SOCK1" "$QUERY")
restored_result=$(sql "$PORT2" "$SOCK2" "$QUERY")
mapfile -t source_lines <<<"$source_result"
mapfile -t restored_lines <<<"$restored_result"
echo "source   (table|count|sum of balances):"
printf '  %s\n' "${source_lines[@]}"
echo "restored (table|count|sum of balances):"
printf '  %s\n' "${restored_lines[@]}"
[[ $source_result == "$restored_result" ]] || die "restored data differs from the source"
echo
echo "data matches"
