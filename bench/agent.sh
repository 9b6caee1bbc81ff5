#!/usr/bin/env bash
# Backup through the database-host agent on loopback against a local backup of the same cluster
# (issue 19, acceptance 7: the agent's speed at least 0.8 x local). Builds a pgbench cluster
# listening on 127.0.0.1, a throwaway CA with openssl, starts `recman server --pgdata`, and
# times `backup database` twice each way into two repositories; prints the best of each and
# their ratio. With --restore, times `restore database` instead: from a backup in each
# repository, written here locally against written through the agent (`--restore-dir`) on
# the same disk. Not a test: it prints figures.
#
#   sudo bench/agent.sh [--scale N] [--bin target/release/recman] [--restore [--into DIR]]
#                       [-- options...]
#
# --into DIR restores into a new directory under DIR (e.g. /dev/shm, to take the disk's write
# speed out of the comparison) instead of under the bench's scratch directory.
# The options after -- go to the timed command (backup, or restore with --restore).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCALE=20
RECMAN="$ROOT/target/release/recman"
EXTRA=()
MODE=backup
INTO=
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=$2; shift 2 ;;
        --bin) RECMAN=$2; shift 2 ;;
        --restore) MODE=restore; shift ;;
        --into) INTO=$2; shift 2 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "unknown option $1; usage: $0 [--scale N] [--bin PATH] [--restore [--into DIR]] [-- options]" >&2; exit 2 ;;
    esac
done
BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/recman-agent-bench.XXXXXX)
chown postgres: "$WORK"
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
AGENT_PID=
cleanup() {
    [[ -n $AGENT_PID ]] && kill "$AGENT_PID" 2>/dev/null || true
    as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
    if [[ -n $INTO ]]; then rm -rf "$RESTORES"; fi
}
RESTORES="$WORK/restores"
[[ -n $INTO ]] && RESTORES=$(mktemp -d "$INTO/recman-agent-bench.XXXXXX")
trap cleanup EXIT
cp "$RECMAN" "$WORK/recman" && chmod 755 "$WORK/recman"
R="$WORK/recman"
PORT=$((58000 + RANDOM % 1000))
APORT=$((59000 + RANDOM % 1000))

# The fleet's CA, the agent's certificate (127.0.0.1) and the backup host's (CN bench).
(
    cd "$WORK"
    ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -days 2 -subj /CN=bench-ca -keyout ca.key -out ca.crt \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    for n in server bench; do
        openssl req -new "${ec[@]}" -subj "/CN=$n" -keyout $n.key -out $n.csr 2>/dev/null
        if [[ $n == server ]]; then
            printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > $n.ext
        else
            printf 'extendedKeyUsage=clientAuth\n' > $n.ext
        fi
        openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile $n.ext -out $n.crt 2>/dev/null
    done
    chown postgres: ./* && chmod 600 ./*.key
)

mkdir -p "$WORK/sock" "$RESTORES" && chown postgres: "$WORK/sock" "$RESTORES"
as_pg "$BIN/initdb" -D "$WORK/pgdata" --data-checksums --auth=trust -U postgres >/dev/null
cat >> "$WORK/pgdata/postgresql.conf" <<CONF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK/sock'
autovacuum = off
wal_level = replica
archive_mode = on
archive_command = '$R --repo $WORK/local archive-push %p && $R --repo $WORK/remote archive-push %p'
CONF
as_pg "$R" --repo "$WORK/local" create catalog >/dev/null
as_pg "$R" --repo "$WORK/remote" create catalog >/dev/null
as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -l "$WORK/server.log" -w start >/dev/null
as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$PORT" -i -q -s "$SCALE" postgres >/dev/null 2>&1
as_pg psql -h "$WORK/sock" -p "$PORT" -qc checkpoint postgres
T="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"
TLS=(--tls-cert "$WORK/bench.crt" --tls-key "$WORK/bench.key" --tls-ca "$WORK/ca.crt")
as_pg "$R" --pgdata "$WORK/pgdata" --tls-cert "$WORK/server.crt" --tls-key "$WORK/server.key" \
    --tls-ca "$WORK/ca.crt" server --listen "127.0.0.1:$APORT" --allow bench \
    --restore-dir "$RESTORES" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$APORT") 2>/dev/null && break
    sleep 0.1
done
as_pg "$R" --repo "$WORK/local" --pgdata "$WORK/pgdata" --target "$T" register database >/dev/null
as_pg "$R" --repo "$WORK/remote" --target "$T" "${TLS[@]}" register database \
    --agent "https://127.0.0.1:$APORT" >/dev/null
SIZE=$(du -sb "$WORK/pgdata/base" | cut -f1)

run() { # repo args... -> seconds of the best of two
    local best=
    for i in 1 2; do
        local t0 t1
        t0=$(date +%s.%N)
        if [[ $MODE == backup ]]; then
            as_pg "$R" --repo "$@" backup database "${EXTRA[@]}" >/dev/null
        else
            as_pg "$R" --repo "$@" restore database --to "$RESTORES/r$i" "${EXTRA[@]}" >/dev/null
        fi
        t1=$(date +%s.%N)
        rm -rf "$RESTORES/r$i"
        local s
        s=$(echo "$t1 - $t0" | bc -l)
        if [[ -z $best ]] || (( $(echo "$s < $best" | bc -l) )); then best=$s; fi
    done
    echo "$best"
}
if [[ $MODE == backup ]]; then
    LOCAL=$(run "$WORK/local" --pgdata "$WORK/pgdata" --target "$T")
    AGENT=$(run "$WORK/remote" --target "$T" "${TLS[@]}")
else
    # One backup in each repository; each restore writes a new directory, removed after it.
    as_pg "$R" --repo "$WORK/local" --pgdata "$WORK/pgdata" --target "$T" backup database >/dev/null
    as_pg "$R" --repo "$WORK/remote" --target "$T" "${TLS[@]}" backup database >/dev/null
    LOCAL=$(run "$WORK/local")
    AGENT=$(run "$WORK/remote" "${TLS[@]}" --agent "https://127.0.0.1:$APORT")
fi
printf 'cluster: pgbench scale %s, base/ %s MiB; %s options: %s%s\n' "$SCALE" $((SIZE >> 20)) "$MODE" "${EXTRA[*]:-(defaults)}" "${INTO:+; restored into $INTO}"
printf 'local %s:%*s %6.2f s  %7.1f MB/s\n' "$MODE" $((13 - ${#MODE})) '' "$LOCAL" "$(echo "$SIZE / $LOCAL / 1000000" | bc -l)"
printf 'through the agent:    %6.2f s  %7.1f MB/s\n' "$AGENT" "$(echo "$SIZE / $AGENT / 1000000" | bc -l)"
printf 'ratio agent / local:  %6.2f  (target: >= 0.80)\n' "$(echo "$LOCAL / $AGENT" | bc -l)"
