#!/usr/bin/env bash
# Change tracking against the scan: a cluster archiving into a fresh repository, pgbench
# scale $SCALE, a level 0, a fixed pgbench workload ($TX transactions per client, 2 clients),
# then a tracked cumulative level 1 and a scan-based one (RECMAN_CHANGE_TRACKING=off) of the
# same parent, back to back. Prints bytes read and wall time of each, and the size of the
# change-tracking summaries against the WAL they describe. Reports; asserts nothing.
#
#   bench/change-tracking.sh [RECMAN_BINARY]     (env: SCALE=20 TX=3000 PGBIN WORK)
set -euo pipefail
BIN=${1:-$(dirname "$0")/../target/release/recman}
BIN=$(realpath "$BIN")
SCALE=${SCALE:-20}
TX=${TX:-3000}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
WORK=${WORK:-$(mktemp -d /tmp/recman-ct-bench.XXXXXX)}
PORT=${PORT:-55931}
chmod 755 "$WORK"
chown postgres "$WORK"
as_pg() { su postgres -s /bin/bash -c "$*"; }
D=$WORK/data R=$WORK/repo
trap 'as_pg "$PGBIN/pg_ctl -D $D -m immediate stop" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
as_pg "$BIN --repo $R create catalog" >/dev/null
as_pg "$PGBIN/initdb -D $D --data-checksums -A trust" >/dev/null
cat >> "$D/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
wal_level = replica
archive_mode = on
archive_command = '$BIN --repo $R archive-push %p'
autovacuum = off
max_wal_size = 4GB
CONF
as_pg "$PGBIN/pg_ctl -D $D -l $WORK/log -w start" >/dev/null
T="host=$WORK port=$PORT user=postgres dbname=postgres"
G="--repo $R --pgdata $D --target '$T'"
as_pg "$BIN $G register database --name main" >/dev/null
as_pg "$PGBIN/pgbench -q -i -s $SCALE -h $WORK -p $PORT postgres" >/dev/null 2>&1
as_pg "$BIN $G backup database --incremental-level 0 --tag L0" >/dev/null 2>&1
as_pg "$PGBIN/pgbench -n -c 2 -t $TX -h $WORK -p $PORT postgres" >/dev/null 2>&1
row() { as_pg "$BIN $G list backup --json" | python3 -c "
import json,sys
b=[x for x in json.load(sys.stdin) if x['tag']=='$1'][0]
print(b['database_bytes'], b['read_bytes'], b['tracked_bytes'], b['written_bytes'])"; }
timed() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
tt=$(timed as_pg "$BIN $G backup database --incremental-level 1 --cumulative --tag TRACKED")
ts=$(timed as_pg "RECMAN_CHANGE_TRACKING=off $BIN $G backup database --incremental-level 1 --cumulative --tag SCAN")
read -r db rt tb wt < <(row TRACKED)
read -r _ rs _ ws < <(row SCAN)
echo "database_bytes $db"
echo "tracked level 1: read $rt bytes ($tb through summaries), wrote $wt, $tt s"
echo "scan level 1:    read $rs bytes, wrote $ws, $ts s"
echo "read ratio scan/tracked: $(echo "scale=2; $rs / $rt" | bc), time ratio: $(echo "scale=2; $ts / $tt" | bc)"
wal=$(find "$R" -name '*.rmw' -printf '%s\n' | awk '{s+=$1} END {print s}')
sum=$(find "$R" -name '*.rmb' -printf '%s\n' | awk '{s+=$1} END {print s}')
n=$(find "$R" -name '*.rmw' | wc -l)
echo "summaries: $sum bytes for $n segments ($((n * 16)) MiB of WAL, $wal bytes stored): $(echo "scale=4; 100 * $sum / ($n * 16777216)" | bc) % of the WAL"
