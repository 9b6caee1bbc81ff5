#!/usr/bin/env bash
# `recman calibrate` against fio on the same device and files (issue 15: within 15 %). Builds a
# pgbench cluster, then, RUNS times in turn, runs calibrate and fio with the shapes calibrate
# probes (direct reads of the first 256 MiB of the cluster's largest file at 128K x 1, 1M x 1,
# 1M x 4, 1M x 16 on io_uring; one stream of 1 MiB direct writes, 4 in flight, then fsync, in the repository) and
# prints the medians of both and their ratio. Not a test: it prints figures.
#
#   sudo bench/calibrate-fio.sh [--scale N] [--bin target/release/recman] [--runs N]
#                               [--throttle RATE]
#
# --throttle RATE (e.g. 50M) puts both tools in a cgroup v1 blkio group that caps reads and
# writes of the disk at RATE bytes/s: a device whose rate is known. Unthrottled, the virtual
# disk of these machines is the host's page cache, whose rate changes by 2x between runs of
# either tool; the medians of RUNS interleaved runs are what can be compared there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCALE=30
RUNS=3
THROTTLE=
RECMAN="$ROOT/target/release/recman"
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=$2; shift 2 ;;
        --bin) RECMAN=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --throttle) THROTTLE=$(numfmt --from=iec "$2"); shift 2 ;;
        *) echo "unknown option $1; usage: $0 [--scale N] [--bin PATH] [--runs N] [--throttle RATE]" >&2; exit 2 ;;
    esac
done
command -v fio >/dev/null || { echo "fio is missing; hint: apt-get install -y fio" >&2; exit 2; }
BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/recman-calfio.XXXXXX)
chown postgres: "$WORK"
PG_AS=()
[[ $(id -u) -ne 0 ]] || PG_AS=(runuser -u postgres --)
as_pg() { "${PG_AS[@]}" "$@"; }
GROUP=
cleanup() {
    as_pg "$BIN/pg_ctl" -D "$WORK/pgdata" -m immediate stop >/dev/null 2>&1 || true
    [[ -z $GROUP ]] || rmdir "$GROUP" 2>/dev/null || true
    rm -rf "$WORK"
}
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
# in_group CMD...: CMD in the throttle's cgroup when there is one.
in_group() {
    if [[ -n $GROUP ]]; then
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$GROUP" "$@"
    else
        "$@"
    fi
}
if [[ -n $THROTTLE ]]; then
    [[ $(id -u) -eq 0 ]] || { echo "--throttle needs root (cgroups)" >&2; exit 2; }
    BLKIO=/sys/fs/cgroup/blkio
    [[ -e $BLKIO/blkio.throttle.read_bps_device ]] ||
        { echo "--throttle: no cgroup v1 blkio controller at $BLKIO" >&2; exit 2; }
    GROUP=$BLKIO/recman-calfio-$$
    mkdir "$GROUP"
    DISK=$(stat -c '%Hd:%Ld' "$WORK")
    echo "$DISK $THROTTLE" >"$GROUP/blkio.throttle.read_bps_device"
    echo "$DISK $THROTTLE" >"$GROUP/blkio.throttle.write_bps_device"
    chmod 666 "$GROUP/cgroup.procs"
    echo "blkio throttle on $DISK: $THROTTLE bytes/s for reads and writes, both tools"
fi
# What calibrate reads: the cluster's files largest first, each probe up to 256 MiB (or 1.5 s).
# At the default scale (30) the largest file alone holds more than 256 MiB, so fio reads the
# same bytes: its first 256 MiB. (At scale 10 calibrate goes on into ~900 small files, whose
# per-file cost at queue depth 1 fio's job would not have.)
LARGEST=$(find "$WORK/pgdata/base" -type f -printf '%s %p\n' | sort -rn | awk 'NR == 1 { print $2 }')
(($(stat -c %s "$LARGEST") >= 256 << 20)) || echo "warning: the largest file is under 256 MiB at scale $SCALE; calibrate reads more files than fio" >&2
fio_read() { # bs qd
    in_group fio --name=r --readonly --filename="$LARGEST" --size=256M --rw=read --direct=1 --bs="$1" --iodepth="$2" \
        --ioengine=io_uring --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["jobs"][0]["read"]["bw_bytes"]))'
}
fio_write() {
    in_group fio --name=w --filename="$WORK/repo/fio.scratch" --rw=write --direct=1 --bs=1M --size=32M \
        --end_fsync=1 --ioengine=io_uring --iodepth=4 --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["jobs"][0]["write"]["bw_bytes"]))'
    rm -f "$WORK/repo/fio.scratch"
}
# The virtual disk of these machines is cached by the host: the first reads of a file are
# slower than every later one. A first calibrate and fio pass warm it for both tools alike.
in_group "${PG_AS[@]}" "$R" "${G[@]}" calibrate --json >/dev/null
fio_read 1048576 4 >/dev/null
SHAPES=("131072 1" "1048576 1" "1048576 4" "1048576 16")
# One line per run and probe: "probe recman fio".
samples=$WORK/samples
# The tools take turns going first: a run's first reader meets the host's cache colder.
for ((run = 1; run <= RUNS; run++)); do
    ((run % 2)) || { for shape in "${SHAPES[@]}"; do fio_read $shape >"$WORK/fio-${shape/ /-}"; done; fio_write >"$WORK/fio-write"; }
    in_group "${PG_AS[@]}" "$R" "${G[@]}" calibrate --json >"$WORK/cal.json"
    ((run % 2 == 0)) || { for shape in "${SHAPES[@]}"; do fio_read $shape >"$WORK/fio-${shape/ /-}"; done; fio_write >"$WORK/fio-write"; }
    for shape in "${SHAPES[@]}"; do
        set -- $shape
        ours=$(python3 -c "import json; c=json.load(open('$WORK/cal.json')); print([p['bytes_per_second'] for p in c['inputs'][0]['probes'] if p['direct'] and p['request_size']==$1 and p['queue_depth']==$2][0])")
        echo "read-$(($1 >> 10))K-x-$2 $ours $(cat "$WORK/fio-${shape/ /-}")" >>"$samples"
    done
    ours=$(python3 -c "import json; c=json.load(open('$WORK/cal.json')); print(c['outputs'][0]['probes'][0]['bytes_per_second'])")
    echo "write-1M-x-4-fsync $ours $(cat "$WORK/fio-write")" >>"$samples"
done
python3 - "$samples" "$RUNS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    probe, ours, theirs = line.split()
    rows.setdefault(probe, []).append((int(ours), int(theirs)))
print("| probe (median of %s runs) | recman calibrate | fio | ratio | runs: recman / fio MB/s |" % sys.argv[2])
print("|---|---|---|---|---|")
for probe, v in rows.items():
    o = statistics.median(x for x, _ in v)
    t = statistics.median(y for _, y in v)
    runs = ", ".join("%.0f/%.0f" % (x / 1e6, y / 1e6) for x, y in v)
    print("| %s | %.1f MB/s | %.1f MB/s | %.2f | %s |" % (probe, o / 1e6, t / 1e6, o / t, runs))
PY
