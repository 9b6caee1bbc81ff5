#!/usr/bin/env bash
# `recman calibrate` against fio on the same device and files (issue 15: within 15 %). Builds a
# pgbench cluster, runs calibrate, then fio with the shapes calibrate probes (direct reads of
# the cluster's largest files at 128K x 1, 1M x 1, 1M x 4, 1M x 16; a 32 MiB direct write, 4 in
# flight, + fsync in the repository) and prints both and their ratio. Not a test: it prints figures.
#
#   sudo bench/calibrate-fio.sh [--scale N] [--bin target/debug/recman]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCALE=10
RECMAN="$ROOT/target/release/recman"
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=$2; shift 2 ;;
        --bin) RECMAN=$2; shift 2 ;;
        *) echo "unknown option $1; usage: $0 [--scale N] [--bin PATH]" >&2; exit 2 ;;
    esac
done
command -v fio >/dev/null || { echo "fio is missing; hint: apt-get install -y fio" >&2; exit 2; }
BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/recman-calfio.XXXXXX)
chown postgres: "$WORK"
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() { as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
cp "$RECMAN" "$WORK/recman" && chmod 755 "$WORK/recman"
R="$WORK/recman"
PORT=$((57000 + RANDOM % 1000))
mkdir -p "$WORK/sock" && chown postgres: "$WORK/sock"
as_pg "$BIN/initdb" -D "$WORK/pgdata" --data-checksums --auth=trust -U postgres >/dev/null
cat >> "$WORK/pgdata/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK/sock'
autovacuum = off
CONF
as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -l "$WORK/server.log" -w start >/dev/null
as_pg /usr/lib/postgresql/15/bin/pgbench -h "$WORK/sock" -p "$PORT" -i -q -s "$SCALE" postgres >/dev/null 2>&1
as_pg psql -h "$WORK/sock" -p "$PORT" -qc checkpoint postgres
T="host=$WORK/sock port=$PORT user=postgres dbname=postgres"
G=(--repo "$WORK/repo" --pgdata "$WORK/pgdata" --target "$T")
as_pg "$R" --repo "$WORK/repo" create catalog >/dev/null
as_pg "$R" "${G[@]}" register database --name main >/dev/null
# The virtual disk of these machines is cached by the host: the first reads of a file are
# slower than every later one. A first calibrate (and fio pass) warms it for both tools alike.
as_pg "$R" "${G[@]}" calibrate --json > /dev/null
as_pg "$R" "${G[@]}" calibrate --json > "$WORK/cal.json"
# The files calibrate reads first: the largest of the cluster.
FILES=$(find "$WORK/pgdata/base" -type f -size +1M -printf '%s %p\n' | sort -rn | head -8 | cut -d' ' -f2- | paste -sd:)
fio_read() { # bs qd
    fio --name=r --readonly --filename="$FILES" --rw=read --direct=1 --bs="$1" --iodepth="$2" \
        --ioengine=io_uring --runtime=2 --time_based=0 --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["jobs"][0]["read"]["bw_bytes"]))'
}
fio_write() {
    fio --name=w --filename="$WORK/repo/fio.scratch" --rw=write --direct=1 --bs=1M --size=32M \
        --end_fsync=1 --ioengine=libaio --iodepth=4 --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["jobs"][0]["write"]["bw_bytes"]))'
}
fio_read 1048576 4 >/dev/null
echo "| probe | recman calibrate | fio | ratio |"
echo "|---|---|---|---|"
for shape in "131072 1" "1048576 1" "1048576 4" "1048576 16"; do
    set -- $shape
    ours=$(python3 -c "import json; c=json.load(open('$WORK/cal.json')); print([p['bytes_per_second'] for p in c['inputs'][0]['probes'] if p['direct'] and p['request_size']==$1 and p['queue_depth']==$2][0])")
    theirs=$(fio_read "$1" "$2")
    python3 -c "print('| read %dK x %d direct | %.1f MB/s | %.1f MB/s | %.2f |' % ($1>>10, $2, $ours/1e6, $theirs/1e6, $ours/$theirs))"
done
ours=$(python3 -c "import json; c=json.load(open('$WORK/cal.json')); print(c['outputs'][0]['probes'][0]['bytes_per_second'])")
theirs=$(fio_write)
rm -f "$WORK/repo/fio.scratch"
python3 -c "print('| write 1M + fsync, 1 stream | %.1f MB/s | %.1f MB/s | %.2f |' % ($ours/1e6, $theirs/1e6, $ours/$theirs))"
