#!/usr/bin/env bash
# Scale-out demo (not run in CI): recman's repository on a 3-node Garage
# cluster, every copy of every object on all three nodes, and a restore that
# still works once one node is gone.
#
#   1. finds (or builds once) Garage 2.5.0 and starts three nodes on
#      127.0.0.1 with replication factor 3, each with its own S3, RPC and
#      admin port, and creates an access key and a bucket;
#   2. starts a throwaway PostgreSQL 15 cluster with pgbench data whose
#      archive_command pushes WAL into s3://BUCKET/PREFIX on that cluster;
#   3. catalog, register, backup on 2 channels (lz4), validate, restore,
#      starts the restored copy and compares it with the source;
#   4. kills one Garage node (SIGKILL), adds more pgbench traffic (archived
#      through the 2 surviving nodes), lists the backups (also from an empty
#      catalog cache, so the catalog is rebuilt from the objects), restores
#      again and compares again;
#   5. prints a summary with throughput and "SCALE-OUT DEMO PASSED".
#
# Usage: sudo scripts/s3-scaleout.sh
# Knobs (environment):
#   SCALE=10          pgbench scale factor of the source database
#   STOP_NODE=3       which Garage node (1-3) to kill; recman talks to node 1,
#                     or to node 2 when node 1 is the one killed
#   RECMAN_GARAGE=F   garage binary to use instead of the cached build
#   RECMAN_TOOLS_DIR  where tools are built and cached
#                     (default ~/.cache/recman-tools, as for s3s-fs)
#   GARAGE_BASE_PORT  first port tried for the nodes (default 39100)
#   QUICKACK=1        run everything in a private network namespace whose
#                     loopback routes have quickack on; avoids Garage's ~44 ms
#                     Nagle/delayed-ACK stall per small request (docs/s3.md)
#   KEEP=1            keep the work dir (logs, data) under /tmp
#
# Runs as root: Garage runs as root, PostgreSQL and recman as the postgres
# OS user. Everything listens on 127.0.0.1 or on Unix sockets in the work dir.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$ROOT/scripts/$(basename "${BASH_SOURCE[0]}")"

[[ $EUID -eq 0 ]] || {
    echo "run as root (sudo $0): Garage runs as root, PostgreSQL as postgres" >&2
    exit 1
}

# Inside the private namespace (QUICKACK=1) the build already happened.
if [[ ${_RECMAN_SCALEOUT_NETNS:-0} == 1 ]]; then
    export SKIP_BUILD=1
fi
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh"

PGBIN=/usr/lib/postgresql/15/bin
SCALE=${SCALE:-10}
STOP_NODE=${STOP_NODE:-3}
NODES=3
GARAGE_VERSION=2.5.0
RECOVERY_TIMEOUT_S=${RECOVERY_TIMEOUT_S:-300}
BUCKET=recman-scaleout
PREFIX=pg/demo

log() { printf '\n== %s\n' "$*"; }
die() {
    printf '\nSCALE-OUT DEMO FAILED: %s\n' "$*" >&2
    exit 1
}
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
mb_per_s() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f", n / 1e6 / (b - a) }'; }

[[ $SCALE =~ ^[1-9][0-9]*$ ]] || die "SCALE must be a whole number above 0, not '$SCALE'"
[[ $STOP_NODE =~ ^[1-3]$ ]] || die "STOP_NODE must be 1, 2 or 3, not '$STOP_NODE'"
id postgres >/dev/null 2>&1 || die "no postgres OS user (is postgresql-15 installed?)"

# --- the garage binary: RECMAN_GARAGE, else a cached build of $GARAGE_VERSION ---
TOOLS=${RECMAN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/recman-tools}
if [[ -n ${RECMAN_GARAGE:-} ]]; then
    GARAGE=$RECMAN_GARAGE
    [[ -x $GARAGE ]] || die "RECMAN_GARAGE=$GARAGE is not an executable file"
else
    GARAGE=$TOOLS/bin/garage
    have=
    [[ -x $GARAGE ]] && have=$("$GARAGE" --version 2>/dev/null || true)
    if [[ $have != *"$GARAGE_VERSION"* ]]; then
        [[ ${_RECMAN_SCALEOUT_NETNS:-0} == 1 ]] && die "no garage build in $TOOLS (and no network in the namespace)"
        echo "[scaleout] building garage $GARAGE_VERSION into $TOOLS (once; 10-20 minutes, needs cc and make)" >&2
        cargo install "garage@$GARAGE_VERSION" --locked --root "$TOOLS" >&2 ||
            die "cannot build garage; hint: check network access to the crates registry, gcc and make"
    fi
fi
echo "[scaleout] garage: $GARAGE ($("$GARAGE" --version 2>/dev/null | head -n1))" >&2

# --- QUICKACK=1: start again inside a private network namespace ---
if [[ ${QUICKACK:-0} == 1 && ${_RECMAN_SCALEOUT_NETNS:-0} != 1 ]]; then
    echo "[scaleout] QUICKACK=1: re-running inside a private network namespace" >&2
    export _RECMAN_SCALEOUT_NETNS=1 RECMAN_GARAGE=$GARAGE
    # Only the namespace's own loopback is touched, never the host's.
    # shellcheck disable=SC2016 # $0 is expanded by the inner bash
    exec unshare --net -- bash -c '
        set -e
        ip link set lo up
        ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
        ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
        exec bash "$0"' "$SELF"
fi

AS_PG=(runuser -u postgres --)
pg() { "${AS_PG[@]}" "$@"; }

# PostgreSQL programs call getcwd(); a cwd under /root would be closed to postgres.
cd /

WORK=$(mktemp -d /tmp/recman-scaleout.XXXXXX)
chmod 0700 "$WORK"
chown postgres:postgres "$WORK"
GDIR=$WORK/garage # root's; postgres never needs it
mkdir -m 0700 "$GDIR"
SRC=$WORK/source
DST1=$WORK/restored1
DST2=$WORK/restored2
SOCK=$WORK/sock
CACHE=$WORK/cache
CONF=$WORK/recman.toml
pg mkdir "$SOCK" "$WORK/bin" "$CACHE"

RECMAN=$WORK/bin/recman
cp "$ROOT/target/release/recman" "$RECMAN"
chmod 0755 "$RECMAN"

declare -A NODE_PID=()

# Stops garage node $1 with signal $2 (TERM or KILL) and waits for its exit.
stop_node() {
    local i=$1 sig=$2 pid=${NODE_PID[$1]:-} state
    [[ -n $pid ]] || return 0
    kill -s "$sig" "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 15))
    while kill -0 "$pid" 2>/dev/null; do
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
        [[ $state == Z || $state == gone ]] && break
        if ((SECONDS >= deadline)); then
            kill -s KILL "$pid" 2>/dev/null || true
            deadline=$((SECONDS + 15))
        fi
        sleep 0.1
    done
    wait "$pid" 2>/dev/null || true
    unset "NODE_PID[$i]"
}

pg_stop() {
    [[ -f $1/postmaster.pid ]] || return 0
    pg "$PGBIN/pg_ctl" -D "$1" -m fast -w -t 60 stop >/dev/null 2>&1 ||
        pg "$PGBIN/pg_ctl" -D "$1" -m immediate -w stop >/dev/null 2>&1 || true
}

cleanup() {
    local rc=$? i warnings
    set +e
    # Clusters first: the source archives into Garage until it stops.
    for d in "$DST2" "$DST1" "$SRC"; do pg_stop "$d"; done
    for i in "${!NODE_PID[@]}"; do
        kill -s TERM "${NODE_PID[$i]}" 2>/dev/null
    done
    for i in "${!NODE_PID[@]}"; do stop_node "$i" TERM; done
    if [[ $rc -ne 0 ]]; then
        for f in "$WORK"/*.log; do
            [[ -f $f ]] && printf '\n--- last lines of %s ---\n' "$f" >&2 && tail -n 20 "$f" >&2
        done
        for f in "$GDIR"/node*/garage.log; do
            warnings=$(grep -E ' (WARN|ERROR) ' "$f" 2>/dev/null | tail -n 10)
            [[ -n $warnings ]] && printf '\n--- last warnings of %s ---\n%s\n' "$f" "$warnings" >&2
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

# --- ports: S3 = base, RPC = base+1, admin = base+2 for each node; nothing may answer on any ---
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports_free() {
    local p
    for p in "$@"; do port_busy "$p" && return 1; done
    return 0
}
declare -A S3_PORT=() RPC_PORT=() ADMIN_PORT=()
base=${GARAGE_BASE_PORT:-39100}
for i in $(seq 1 $NODES); do
    until ports_free "$base" $((base + 1)) $((base + 2)); do base=$((base + 10)); done
    S3_PORT[$i]=$base RPC_PORT[$i]=$((base + 1)) ADMIN_PORT[$i]=$((base + 2))
    base=$((base + 10))
done
PG_PORT=55432
until ! port_busy "$PG_PORT" && ! port_busy $((PG_PORT + 1)) && ! port_busy $((PG_PORT + 2)); do
    PG_PORT=$((PG_PORT + 3))
done
PORT_SRC=$PG_PORT PORT_R1=$((PG_PORT + 1)) PORT_R2=$((PG_PORT + 2))

# --- garage ---
g() { "$GARAGE" -c "$GDIR/node1/garage.toml" "$@"; } # admin CLI through node 1 (over RPC)
gnode() {                                            # the same through node $1
    local i=$1
    shift
    "$GARAGE" -c "$GDIR/node$i/garage.toml" "$@"
}
json_str() { sed -n "s/.*\"$1\": *\"\\([^\"]*\\)\".*/\\1/p" | head -n1; }
json_num() { sed -n "s/.*\"$1\": *\\([0-9.]*\\).*/\\1/p" | head -n1; }
health() { g json-api GetClusterHealth 2>/dev/null | json_str status; }

log "starting $NODES Garage nodes (replication factor 3) in $GDIR"
t_garage0=$(now)
rpc_secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
admin_token=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
write_node_config() { # i peers
    local i=$1 d=$GDIR/node$1
    cat >"$d/garage.toml" <<EOF
# Garage node $i of the recman scale-out demo; loopback only.
metadata_dir = "$d/meta"
data_dir = "$d/data"
db_engine = "lmdb"
replication_factor = 3
consistency_mode = "consistent"
compression_level = 1

rpc_secret = "$rpc_secret"
rpc_bind_addr = "127.0.0.1:${RPC_PORT[$i]}"
# Without it Garage advertises whatever address it guesses, maybe not loopback.
rpc_public_addr = "127.0.0.1:${RPC_PORT[$i]}"
bootstrap_peers = [$2]

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:${S3_PORT[$i]}"

[admin]
api_bind_addr = "127.0.0.1:${ADMIN_PORT[$i]}"
admin_token = "$admin_token"
EOF
    chmod 0600 "$d/garage.toml"
}
for i in $(seq 1 $NODES); do
    mkdir -p "$GDIR/node$i/meta" "$GDIR/node$i/data"
    write_node_config "$i" ""
    NO_COLOR=1 RUST_LOG=${RUST_LOG:-garage=info} "$GARAGE" -c "$GDIR/node$i/garage.toml" server \
        >"$GDIR/node$i/garage.log" 2>&1 </dev/null &
    NODE_PID[$i]=$!
    echo "node$i: pid ${NODE_PID[$i]}, s3 127.0.0.1:${S3_PORT[$i]}, rpc :${RPC_PORT[$i]}, admin :${ADMIN_PORT[$i]}"
done

# `node id` only reads the key a node wrote at start; a health query goes over RPC, so
# its answer means the node listens.
declare -A NODE_ID=()
for i in $(seq 1 $NODES); do
    deadline=$((SECONDS + 60))
    until gnode "$i" json-api GetClusterHealth >/dev/null 2>&1 &&
        NODE_ID[$i]=$(gnode "$i" node id -q 2>/dev/null) && [[ -n ${NODE_ID[$i]} ]]; do
        kill -0 "${NODE_PID[$i]}" 2>/dev/null || die "garage node$i exited at start ($GDIR/node$i/garage.log)"
        ((SECONDS < deadline)) || die "garage node$i does not answer after 60 s"
        sleep 0.2
    done
done
for i in $(seq 2 $NODES); do
    tries=0
    until g node connect "${NODE_ID[$i]}" >/dev/null; do
        ((++tries < 20)) || die "node1 cannot connect to node$i"
        sleep 0.5
    done
done
# Every node gets the others as bootstrap peers, so one restarted alone finds them again
# (takes effect at the next start; Garage stores its peer list only lazily).
peers=$(printf '"%s", ' "${NODE_ID[@]}")
for i in $(seq 1 $NODES); do write_node_config "$i" "${peers%, }"; done
for i in $(seq 1 $NODES); do
    g layout assign --zone "dc$i" --capacity 1G "${NODE_ID[$i]%@*}" >/dev/null ||
        die "layout assign of node$i failed"
done
g layout apply --version 1 >/dev/null || die "layout apply failed"

deadline=$((SECONDS + 120))
until [[ $(health) == healthy ]]; do
    ((SECONDS < deadline)) || {
        g status >&2 || true
        die "garage cluster not healthy after 120 s"
    }
    sleep 0.2
done
t_garage1=$(now)
g status | sed 's/^/  /'

key_json=$(g json-api CreateKey '{"name": "recman-scaleout"}') || die "cannot create a garage key"
KEY_ID=$(json_str accessKeyId <<<"$key_json")
KEY_SECRET=$(json_str secretAccessKey <<<"$key_json")
[[ -n $KEY_ID && -n $KEY_SECRET ]] || die "no key id or secret in CreateKey's answer"
g bucket create "$BUCKET" >/dev/null || die "cannot create bucket $BUCKET"
g bucket allow --read --write --owner "$BUCKET" --key "$KEY_ID" >/dev/null ||
    die "cannot grant key $KEY_ID on bucket $BUCKET"
echo "cluster healthy in $(elapsed "$t_garage0" "$t_garage1") s; key $KEY_ID, bucket $BUCKET"

# recman reaches Garage through one node's S3 port. The secret lives only in this file.
ENDPOINT_NODE=1
[[ $STOP_NODE == 1 ]] && ENDPOINT_NODE=2
write_recman_config() { # node
    local tmp=$CONF.new
    cat >"$tmp" <<EOF
# recman settings for the scale-out demo: repository s3://$BUCKET/$PREFIX on Garage.
[s3]
endpoint = "http://127.0.0.1:${S3_PORT[$1]}"
region = "garage"
access-key-id = "$KEY_ID"
secret-access-key = "$KEY_SECRET"
part-size = "16M"
parts-in-flight = 4
virtual-hosted = false
max-retries = 10
request-timeout = 120
EOF
    chown postgres:postgres "$tmp"
    chmod 0600 "$tmp"
    mv -f "$tmp" "$CONF"
}
write_recman_config "$ENDPOINT_NODE"
URL=s3://$BUCKET/$PREFIX
S3ARGS=(--config "$CONF" --repo "$URL" --repo-cache "$CACHE")

# Shows a recman command with short names, then runs it as postgres.
recman() {
    local shown=recman arg
    for arg in "$@"; do
        if [[ $arg == *[[:space:]]* ]]; then shown+=" \"$arg\""; else shown+=" $arg"; fi
    done
    shown=${shown//"$WORK"/\$WORK}
    printf '\n$ %s\n' "$shown"
    pg "$RECMAN" "$@" || die "this recman command failed (exit $?): $shown"
}

sql() { # port sql
    pg "$PGBIN/psql" -XAtq -v ON_ERROR_STOP=1 -h "$SOCK" -p "$1" -U postgres -d postgres -c "$2"
}

# Count, sum of balances and a sum of row hashes (every column) of each pgbench table.
CHECKSUMS="select 'pgbench_accounts', count(*), coalesce(sum(abalance), 0), coalesce(sum(hashtext(t::text)), 0) from pgbench_accounts t
 union all select 'pgbench_branches', count(*), coalesce(sum(bbalance), 0), coalesce(sum(hashtext(t::text)), 0) from pgbench_branches t
 union all select 'pgbench_tellers', count(*), coalesce(sum(tbalance), 0), coalesce(sum(hashtext(t::text)), 0) from pgbench_tellers t
 union all select 'pgbench_history', count(*), coalesce(sum(delta), 0), coalesce(sum(hashtext(t::text)), 0) from pgbench_history t"

# Starts restored cluster $1 on port $2 and waits until recovery is over.
start_restored() {
    local dir=$1 port=$2 name
    name=$(basename "$dir")
    [[ -f $dir/PG_VERSION ]] || die "restore left no data directory at $dir"
    log "starting $name on port $port (WAL comes from S3 through restore_command)"
    # archive_mode=off: this copy must not archive a new timeline into the repository.
    pg "$PGBIN/pg_ctl" -D "$dir" -l "$WORK/$name.log" -w -t "$RECOVERY_TIMEOUT_S" \
        -o "-p $port -c unix_socket_directories='$SOCK' -c listen_addresses='' -c archive_mode=off" \
        start >/dev/null || die "$name did not start"
    local deadline=$((SECONDS + RECOVERY_TIMEOUT_S))
    until [[ $(sql "$port" 'select pg_is_in_recovery()' 2>/dev/null || true) == f ]]; do
        ((SECONDS < deadline)) || die "$name still in recovery after ${RECOVERY_TIMEOUT_S}s"
        sleep 1
    done
    echo "recovery finished"
}

# Compares the pgbench tables of the source and of restored cluster on port $1.
compare_with_source() {
    local port=$1 src dst
    src=$(sql "$PORT_SRC" "$CHECKSUMS")
    dst=$(sql "$port" "$CHECKSUMS")
    echo "source   (table|rows|sum of balances|sum of row hashes):"
    printf '  %s\n' "${src//$'\n'/$'\n'  }"
    echo "restored (table|rows|sum of balances|sum of row hashes):"
    printf '  %s\n' "${dst//$'\n'/$'\n'  }"
    [[ $src == "$dst" ]] || die "restored data differs from the source"
    echo "data matches"
}

# Switches WAL on the source and waits until the finished segment is archived.
archive_now() {
    local seg deadline=$((SECONDS + 120))
    seg=$(sql "$PORT_SRC" 'select pg_walfile_name(pg_switch_wal())')
    until [[ $(sql "$PORT_SRC" "select coalesce(last_archived_wal >= '$seg', false) from pg_stat_archiver") == t ]]; do
        ((SECONDS < deadline)) || die "WAL segment $seg not archived after 120 s (see $WORK/source.log)"
        sleep 0.5
    done
    echo "WAL up to $seg archived"
}

backup_bytes() { # field of the newest backup in list backup --json
    pg "$RECMAN" "${S3ARGS[@]}" list backup --json | json_num "$1"
}

log "work dir $WORK; repository $URL through node $ENDPOINT_NODE; source cluster on port $PORT_SRC"

log "initdb --data-checksums, archive_command pushing into $URL"
pg "$PGBIN/initdb" -D "$SRC" --data-checksums --auth=trust -U postgres \
    --encoding=UTF8 --locale=C --no-instructions >/dev/null
cat >>"$SRC/postgresql.conf" <<EOF

# --- recman scale-out demo ---
listen_addresses = ''
port = $PORT_SRC
unix_socket_directories = '$SOCK'
wal_level = replica
archive_mode = on
archive_command = '"$RECMAN" --config "$CONF" --repo "$URL" --repo-cache "$CACHE" archive-push %p'
EOF
pg "$PGBIN/pg_ctl" -D "$SRC" -l "$WORK/source.log" -w -t 120 start >/dev/null
TARGET="host=$SOCK port=$PORT_SRC user=postgres dbname=postgres"
DBARGS=("${S3ARGS[@]}" --pgdata "$SRC" --target "$TARGET")

# Catalog and registration before any load, so archive-push has somewhere to file the
# first finished WAL segment.
recman "${S3ARGS[@]}" create catalog
recman "${DBARGS[@]}" register database --name scaleout

log "pgbench -i -s $SCALE, then 5 s of pgbench traffic"
pg env PGOPTIONS='-c client_min_messages=warning' \
    "$PGBIN/pgbench" -h "$SOCK" -p "$PORT_SRC" -U postgres -i -s "$SCALE" -q postgres
pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT_SRC" -U postgres -n -T 5 -c 2 postgres | sed -n '/^tps/p'

t_b0=$(now)
recman "${DBARGS[@]}" backup database --channels 2 --compress lz4 --tag SCALEOUT
t_b1=$(now)
DB_BYTES=$(backup_bytes database_bytes)
WRITTEN_BYTES=$(backup_bytes written_bytes)
[[ -n $DB_BYTES && -n $WRITTEN_BYTES ]] || die "list backup --json shows no database_bytes/written_bytes"
recman "${S3ARGS[@]}" list backup
recman "${S3ARGS[@]}" validate backup SCALEOUT

t_r10=$(now)
recman "${S3ARGS[@]}" restore database --to "$DST1" --channels 2
t_r11=$(now)
start_restored "$DST1" "$PORT_R1"
log "comparing the source with restored1 (all 3 Garage nodes up)"
compare_with_source "$PORT_R1"
pg_stop "$DST1"

log "killing Garage node $STOP_NODE (pid ${NODE_PID[$STOP_NODE]}, SIGKILL)"
stop_node "$STOP_NODE" KILL
if [[ $ENDPOINT_NODE != 1 ]]; then
    echo "recman now talks to node $ENDPOINT_NODE"
fi
deadline=$((SECONDS + 60))
st=
until st=$(gnode "$ENDPOINT_NODE" json-api GetClusterHealth 2>/dev/null | json_str status) && [[ $st == degraded ]]; do
    ((SECONDS < deadline)) || die "garage does not see node $STOP_NODE gone after 60 s (status '$st')"
    sleep 0.5
done
gnode "$ENDPOINT_NODE" status 2>&1 | sed 's/^/  /'
echo "cluster status: $st (2 of 3 nodes)"

log "more pgbench traffic, archived through the 2 remaining nodes"
pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT_SRC" -U postgres -n -T 5 -c 2 postgres | sed -n '/^tps/p'
archive_now

recman "${S3ARGS[@]}" list backup
log "the same from an empty catalog cache: recman rebuilds the catalog from the objects"
recman --config "$CONF" --repo "$URL" --repo-cache "$WORK/cache-fresh" list backup
t_r20=$(now)
recman "${S3ARGS[@]}" restore database --to "$DST2" --channels 2
t_r21=$(now)
start_restored "$DST2" "$PORT_R2"
log "comparing the source with restored2 (node $STOP_NODE down)"
compare_with_source "$PORT_R2"

log "summary"
cat <<EOF
garage $GARAGE_VERSION: $NODES nodes on 127.0.0.1, replication factor 3, healthy in $(elapsed "$t_garage0" "$t_garage1") s$([[ ${_RECMAN_SCALEOUT_NETNS:-0} == 1 ]] && echo " (private netns, quickack)")
database:  $(awk -v n="$DB_BYTES" 'BEGIN { printf "%.1f", n / 1e6 }') MB (pgbench scale $SCALE), backup $(awk -v n="$WRITTEN_BYTES" 'BEGIN { printf "%.1f", n / 1e6 }') MB written (lz4, 2 channels)
backup   (3/3 nodes): $(elapsed "$t_b0" "$t_b1") s, $(mb_per_s "$DB_BYTES" "$t_b0" "$t_b1") MB/s
restore  (3/3 nodes): $(elapsed "$t_r10" "$t_r11") s, $(mb_per_s "$DB_BYTES" "$t_r10" "$t_r11") MB/s, data matches the source
restore  (2/3 nodes, node $STOP_NODE killed): $(elapsed "$t_r20" "$t_r21") s, $(mb_per_s "$DB_BYTES" "$t_r20" "$t_r21") MB/s, data matches the source
(MB/s = database size / wall time of the recman command; 1 MB = 10^6 bytes)

SCALE-OUT DEMO PASSED
EOF
