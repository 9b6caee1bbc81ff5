#!/usr/bin/env bash
# recman against the machine's physical limits and against its peers (pgBackRest,
# pg_basebackup), in one run on the same data and the same disk. Not a test: it prints figures
# and ratios; it fails only when a tool fails to run.
#
#   sudo bench/peers.sh [--scale N] [--random-mb N] [--small-scale N] [--wal-segments N]
#                       [--repeat N] [--channels N] [--smoke] [--out-dir DIR] [--keep]
#                       [--throttle READ_BPS:WRITE_BPS] [--backlog N]
#
# --scale         pgbench scale of the main data set (default 20; 300 is the issue's full figure)
# --random-mb     size of the incompressible data set, a second cluster (default: scale x 10 MB)
# --small-scale   pgbench scale of the small data set, a third cluster, for recman's peak memory
#                 at two scales (default: scale / 10, at least 1)
# --wal-segments  WAL segments of the WAL phase (default 64; 1000 is the issue's full figure)
# --repeat        runs of each measurement, alternating the tools (default 3)
# --channels      recman channels = pgBackRest process-max (default: cores)
# --smoke         scale 1, 16 MB random, 4 WAL segments, one run, short limit jobs (CI); writes
#                 under /tmp
# --out-dir       where latest.json and latest.md go (default bench/results)
# --keep          keep the temp dir
# --throttle      a slower device profile, e.g. 300M:250M: every read and write of the work
#                 dir's disk held at these rates for the whole run (limits, every tool,
#                 PostgreSQL), through the root blkio group (bench/common.sh says why the root)
# --backlog       after the report, the WAL backlog drain of N segments (bench/wal-backlog.sh:
#                 segments left .ready by a failing archive_command, drained by PostgreSQL's own
#                 archiver, recman against pgBackRest async), --repeat runs, the same profile;
#                 its table is appended to latest.md (default 0: not run; the issue's figure 160)
#
# Each round: full backups with each compression (recman, pgBackRest, pg_basebackup), restore
# and validate/verify of the lz4 ones, then a fixed pgbench workload on the main cluster and
# incremental backups on top of the lz4 ones (recman level 1 on its lz4 level 0, pgBackRest
# incr on its lz4 full), the incompressible data set, one recman lz4 backup of the small data
# set, and the WAL phase (bench/wal-phase.sh: archive-push and archive-get of N segments the
# way PostgreSQL calls them, recman against pgBackRest async; replay of those N segments with
# restore_command = recman archive-get, cp from a local directory, pgBackRest archive-get).
#
# Everything runs in one temp dir under /tmp (clusters on unix sockets only, repositories, fio
# files) that is removed at the end. Needs root: it installs missing packages, drops the page
# cache before each cold run, and runs PostgreSQL as the postgres user.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCALE=20
RANDOM_MB=
SMALL_SCALE=
WAL_SEGS=
REPEAT=3
CHANNELS=$(nproc)
SMOKE=0
OUT_DIR=
KEEP=0
THROTTLE=
BACKLOG=0
usage() { sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=$2; shift 2 ;;
        --random-mb) RANDOM_MB=$2; shift 2 ;;
        --small-scale) SMALL_SCALE=$2; shift 2 ;;
        --wal-segments) WAL_SEGS=$2; shift 2 ;;
        --repeat) REPEAT=$2; shift 2 ;;
        --channels) CHANNELS=$2; shift 2 ;;
        --smoke) SMOKE=1; shift ;;
        --out-dir) OUT_DIR=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --throttle) THROTTLE=$2; shift 2 ;;
        --backlog) BACKLOG=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "unknown option $1" >&2; usage ;;
    esac
done
if [[ $SMOKE == 1 ]]; then
    SCALE=1; REPEAT=1; RANDOM_MB=${RANDOM_MB:-16}; WAL_SEGS=${WAL_SEGS:-4}
    OUT_DIR=${OUT_DIR:-/tmp/recman-peers-smoke}
fi
RANDOM_MB=${RANDOM_MB:-$((SCALE * 10))}
WAL_SEGS=${WAL_SEGS:-64}
SMALL_SCALE=${SMALL_SCALE:-$((SCALE / 10 > 1 ? SCALE / 10 : 1))}
WAL_SCALE=$((SMOKE ? 1 : 5))   # pgbench scale of the cluster that writes the WAL phase's WAL
OUT_DIR=${OUT_DIR:-$ROOT/bench/results}

log() { printf '[peers] %s\n' "$*" >&2; }
die() { printf '[peers] ERROR: %s\n' "$*" >&2; exit 1; }
((WAL_SEGS >= 2)) || die "--wal-segments must be at least 2"
[[ $EUID -eq 0 ]] || die "run as root (sudo bench/peers.sh): it drops the page cache and runs PostgreSQL as postgres"

# The smoke run (CI) takes the debug binary that `cargo test` already built, when there is one;
# otherwise setup builds the release binary.
RECMAN_BIN=$ROOT/target/release/recman
if [[ $SMOKE == 1 && -x $ROOT/target/debug/recman ]]; then
    RECMAN_BIN=$ROOT/target/debug/recman
    export SKIP_BUILD=1
fi
# shellcheck source=../scripts/setup.sh
source "$ROOT/scripts/setup.sh"
setup_bench_tools
for t in pgbackrest fio lz4 zstd rustc python3; do
    command -v "$t" >/dev/null || die "$t is missing after setup"
done

BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/recman-peers.XXXXXX)
chown postgres: "$WORK"
chmod 755 "$WORK"
PIDS_TO_STOP=()
# shellcheck source=bench/common.sh
source "$ROOT/bench/common.sh"
cleanup() {
    local rc=$?
    local d
    bench_throttle_off
    for d in "${PIDS_TO_STOP[@]}"; do
        runuser -u postgres -- "$BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
    done
    if [[ $KEEP == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n $THROTTLE ]]; then
    bench_throttle_on "$WORK" "$THROTTLE" || die "--throttle $THROTTLE refused"
    log "throttled profile: device $BENCH_THROTTLED_DEV held at ${THROTTLE%%:*}B/s reads, ${THROTTLE##*:}B/s writes (root blkio group: every process, the flusher threads included)"
fi

drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches; }
PY="python3 $ROOT/bench/peers.py"
RUNS=$WORK/runs.jsonl
: > "$RUNS"
[[ -x $RECMAN_BIN ]] || die "no recman binary at $RECMAN_BIN"
cp "$RECMAN_BIN" "$WORK/recman"
R=$WORK/recman
rustc -O --edition 2021 "$ROOT/bench/checksum_rate.rs" -o "$WORK/checksum_rate" 2>/dev/null ||
    die "cannot build bench/checksum_rate.rs"
mkdir -p "$WORK/sock" "$WORK/pgbr-repo" "$WORK/pgbr-spool" "$WORK/pgbr-lock"
chown postgres: "$WORK/sock" "$WORK/pgbr-repo" "$WORK/pgbr-spool" "$WORK/pgbr-lock"
PGBR_CONF=$WORK/pgbackrest.conf
BASE_PORT=$((56000 + RANDOM % 1000))
cat > "$PGBR_CONF" <<CONF
[global]
repo1-path=$WORK/pgbr-repo
repo1-retention-full=1
spool-path=$WORK/pgbr-spool
lock-path=$WORK/pgbr-lock
log-level-console=warn
log-level-file=off
compress-type=lz4
start-fast=y
CONF
chown postgres: "$PGBR_CONF"

# ------------------------------------------------------------------ clusters
# make_cluster NAME PORT [CONF]: initdb with checksums, archiving into a recman repository and
# the pgBackRest stanza NAME (both, so both tools find their WAL), registered in both. CONF:
# more postgresql.conf lines, after (so overriding) the common ones.
make_cluster() {
    local name=$1 port=$2 d=$WORK/$1
    as_pg "$BIN/initdb" -D "$d/pgdata" --data-checksums --auth=trust -U postgres >/dev/null
    cat >> "$d/pgdata/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$WORK/sock'
wal_level = replica
archive_mode = on
archive_command = '$R --repo $d/repo archive-push %p && pgbackrest --config=$PGBR_CONF --stanza=$name archive-push %p'
max_wal_size = 4GB
checkpoint_timeout = 30min
autovacuum = off
shared_buffers = 256MB
${3:-}
CONF
    cat >> "$PGBR_CONF" <<CONF
[$name]
pg1-path=$d/pgdata
pg1-port=$port
pg1-socket-path=$WORK/sock
CONF
    as_pg "$R" --repo "$d/repo" create catalog >/dev/null
    as_pg "$BIN/pg_ctl" -D "$d/pgdata" -l "$d/server.log" -w start >/dev/null
    PIDS_TO_STOP+=("$d/pgdata")
    as_pg pgbackrest --config="$PGBR_CONF" --stanza="$name" stanza-create >/dev/null
    as_pg "$R" --repo "$d/repo" --pgdata "$d/pgdata" --target "host=$WORK/sock port=$port user=postgres dbname=postgres" \
        register database --name "$name" >/dev/null
}
psql_at() { as_pg "$BIN/psql" -h "$WORK/sock" -p "$1" -U postgres -qAtX -v ON_ERROR_STOP=1 -c "$2" postgres; }
# wait until the archiver has nothing left, so that no backlog runs during a measurement
settle() {
    local port=$1 i
    psql_at "$port" "checkpoint" >/dev/null
    for ((i = 0; i < 600; i++)); do
        [[ $(psql_at "$port" "select count(*) from pg_ls_archive_statusdir() where name like '%.ready'") == 0 ]] && return 0
        sleep 0.5
    done
    die "archiver of port $port did not catch up (see $WORK/*/server.log)"
}
# shellcheck source=wal-phase.sh
source "$ROOT/bench/wal-phase.sh"
db_bytes() { # data directory without pg_wal
    local d=$1 all wal
    all=$(du -sb "$d" | cut -f1); wal=$(du -sb "$d/pg_wal" | cut -f1)
    echo $((all - wal))
}

T0=$(date +%s)
PORT_MAIN=$BASE_PORT
PORT_RND=$((BASE_PORT + 1))
PORT_SMALL=$((BASE_PORT + 2))
PORT_WAL=$((BASE_PORT + 3))
# shellcheck disable=SC2034  # used by wal-phase.sh
PORT_REPLAY=$((BASE_PORT + 4))
log "work dir $WORK; pgbench scale $SCALE, random data $RANDOM_MB MB, small scale $SMALL_SCALE, $WAL_SEGS WAL segments, $REPEAT run(s), $CHANNELS channel(s)"
make_cluster pgbench "$PORT_MAIN"
make_cluster random "$PORT_RND"
make_cluster small "$PORT_SMALL"
PIDS_TO_STOP+=("$WORK/replay")   # the WAL phase's recovering copies
log "loading pgbench scale $SCALE, and scale $SMALL_SCALE"
as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$PORT_MAIN" -U postgres -i -s "$SCALE" -q postgres >"$WORK/pgbench-init.log" 2>&1 ||
    { cat "$WORK/pgbench-init.log" >&2; die "pgbench -i failed"; }
as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$PORT_SMALL" -U postgres -i -s "$SMALL_SCALE" -q postgres >"$WORK/pgbench-init-small.log" 2>&1 ||
    { cat "$WORK/pgbench-init-small.log" >&2; die "pgbench -i (small) failed"; }
log "loading $RANDOM_MB MB of random bytes"
psql_at "$PORT_RND" "create extension pgcrypto" >/dev/null
psql_at "$PORT_RND" "create table rnd (id int, b bytea)" >/dev/null
ROWS=$((RANDOM_MB * 1000000 / 1100))   # ~1 KiB of random payload a row, inline (below the TOAST threshold)
CHUNK=200000
for ((i = 0; i < ROWS; i += CHUNK)); do
    n=$((ROWS - i < CHUNK ? ROWS - i : CHUNK))
    psql_at "$PORT_RND" "insert into rnd select g, gen_random_bytes(1024) from generate_series(1, $n) g" >/dev/null
done
settle "$PORT_MAIN"
settle "$PORT_RND"
settle "$PORT_SMALL"
wal_setup "$PORT_WAL"
declare -A PM=()
for ds in pgbench random small; do PM[$ds]=$(head -1 "$WORK/$ds/pgdata/postmaster.pid"); done
DB_MAIN=$(db_bytes "$WORK/pgbench/pgdata")
DB_RND=$(db_bytes "$WORK/random/pgdata")
DB_SMALL=$(db_bytes "$WORK/small/pgdata")
ACC_FILE=$WORK/pgbench/pgdata/$(psql_at "$PORT_MAIN" "select pg_relation_filepath('pgbench_accounts')")
PKEY_FILE=$WORK/pgbench/pgdata/$(psql_at "$PORT_MAIN" "select pg_relation_filepath('pgbench_accounts_pkey')")
RND_FILE=$WORK/random/pgdata/$(psql_at "$PORT_RND" "select pg_relation_filepath('rnd')")
log "data: pgbench $((DB_MAIN / 1000000)) MB, random $((DB_RND / 1000000)) MB, small $((DB_SMALL / 1000000)) MB (without pg_wal), $WAL_SEGS WAL segments; set-up took $(($(date +%s) - T0)) s"

# ------------------------------------------------------------------ physical limits
log "physical limits: fio and dd on $(df --output=source "$WORK" | tail -1)"
LIM=$WORK/limits
mkdir -p "$LIM"
if [[ $SMOKE == 1 ]]; then FSIZE=256; RT=2; else FSIZE=2048; RT=6; fi
FIO_FILE=$WORK/fio.dat
FIO_OUT=$WORK/fio.out
declare -A DISK=()
fio_job() { # label fio-args... -> MB/s of the direction that moved data
    local label=$1; shift
    [[ " $* " == *" --rw=read "* ]] && drop_cache
    fio --name="$label" --output-format=json --output="$LIM/$label.json" --ioengine=io_uring \
        --runtime="$RT" --size="${FSIZE}M" "$@" >/dev/null 2>&1 || { log "fio $label failed"; return 0; }
    local rd wr
    read -r rd wr < <($PY fio "$LIM/$label.json")
    if [[ " $* " == *" --rw=read "* ]]; then DISK[$label]=$rd; else DISK[$label]=$wr; fi
    log "  $label: ${DISK[$label]} MB/s"
}
dd_rate() { # label dd-args...: MB/s from dd's own summary
    local label=$1 out; shift
    out=$(LC_ALL=C dd "$@" 2>&1 | tail -1)
    # "N bytes (...) copied, S s, R MB/s"
    DISK[$label]=$(sed -E 's/^([0-9]+) bytes.* copied, ([0-9.e-]+) s,.*/\1 \2/' <<<"$out" | awk '{printf "%.1f", $1 / $2 / 1e6}')
    log "  $label: ${DISK[$label]} MB/s"
}
# write the test file first (also the write measurements)
for direct in 1 0; do
    for bs in 1m 8k; do
        for qd in 16 1; do
            fio_job "write_$( ((direct)) && echo direct || echo buffered)_${bs}_qd${qd}" --filename="$FIO_FILE" \
                --rw=write --bs="$bs" --iodepth="$qd" --direct="$direct" --end_fsync=1
        done
    done
done
for direct in 1 0; do
    for bs in 1m 8k; do
        for qd in 16 1; do
            fio_job "read_$( ((direct)) && echo direct || echo buffered)_${bs}_qd${qd}" --filename="$FIO_FILE" \
                --rw=read --bs="$bs" --iodepth="$qd" --direct="$direct" --invalidate=1
        done
    done
done
# copy: one job reads the file while another writes a second one, direct, 1 MiB, qd16;
# the copy rate is the slower side
drop_cache
fio --output-format=json --output="$LIM/copy.json" --ioengine=io_uring --direct=1 --bs=1m --iodepth=16 \
    --runtime="$RT" --size="${FSIZE}M" \
    --name=copy_in --filename="$FIO_FILE" --rw=read \
    --name=copy_out --filename="$WORK/fio2.dat" --rw=write --end_fsync=1 >/dev/null 2>&1 || log "fio copy failed"
read -r crd cwr < <($PY fio "$LIM/copy.json")
DISK[copy_direct_1m_qd16]=$(awk -v a="$crd" -v b="$cwr" 'BEGIN{print (a < b ? a : b)}')
log "  copy_direct_1m_qd16: ${DISK[copy_direct_1m_qd16]} MB/s (read $crd, write $cwr concurrently)"
DDCOUNT=$((FSIZE / 2))
drop_cache; dd_rate dd_read_buffered_1m if="$FIO_FILE" of=/dev/null bs=1M count="$DDCOUNT"
drop_cache; dd_rate dd_read_buffered_8k if="$FIO_FILE" of=/dev/null bs=8k count=$((DDCOUNT * 128))
drop_cache; dd_rate dd_read_direct_1m if="$FIO_FILE" of=/dev/null bs=1M count="$DDCOUNT" iflag=direct
drop_cache; dd_rate dd_copy_direct_1m if="$FIO_FILE" of="$WORK/fio2.dat" bs=1M count="$DDCOUNT" iflag=direct oflag=direct
cat "$FIO_FILE" >/dev/null
dd_rate dd_write_buffered_1m_fsync if="$FIO_FILE" of="$WORK/fio2.dat" bs=1M count="$DDCOUNT" conv=fsync
dd_rate dd_write_direct_1m if="$FIO_FILE" of="$WORK/fio2.dat" bs=1M count="$DDCOUNT" oflag=direct
rm -f "$FIO_FILE" "$WORK/fio2.dat" "$FIO_OUT"

log "per-core compression and page-checksum rates on the clusters' own pages"
CODEC_MB=$((SMOKE ? 64 : 512))
for f in accounts:"$ACC_FILE" accounts_pkey:"$PKEY_FILE" random:"$RND_FILE"; do
    name=${f%%:*}; path=${f#*:}
    head -c $((CODEC_MB << 20)) "$path" > "$LIM/$name.seg"
    lz4 -b1 -i1 "$LIM/$name.seg" > "$LIM/$name.lz4.txt" 2>&1 || true
    zstd -b1 -e3 -i1 "$LIM/$name.seg" > "$LIM/$name.zstd.txt" 2>&1 || true
    "$WORK/checksum_rate" "$LIM/$name.seg" "$CODEC_MB" 1 > "$LIM/$name.checksum.json"
    log "  $name: $($PY codec "$LIM/$name.lz4.txt" | head -1) $(cat "$LIM/$name.checksum.json")"
    rm -f "$LIM/$name.seg"
done
for k in "${!DISK[@]}"; do echo "$k ${DISK[$k]}"; done > "$LIM/disk.txt"
for name in accounts accounts_pkey random; do
    $PY codec "$LIM/$name.lz4.txt" | sed 's/^/lz4 /' > "$LIM/$name.codec.txt"
    $PY codec "$LIM/$name.zstd.txt" | sed 's/^/zstd /' >> "$LIM/$name.codec.txt"
done
python3 - "$LIM" > "$WORK/limits.json" <<'EOF'
import json, sys
lim = sys.argv[1]
disk = {}
for line in open(f"{lim}/disk.txt"):
    k, v = line.split()
    disk[k] = float(v) if v else None
out = {"disk": dict(sorted(disk.items()))}
for k in ("read_direct_1m_qd16", "write_direct_1m_qd16", "copy_direct_1m_qd16"):
    out[k] = disk.get(k)
out["codecs"], out["checksum"] = {}, {}
for name in ("accounts", "accounts_pkey", "random"):
    codecs = {}
    for line in open(f"{lim}/{name}.codec.txt"):
        kind, doc = line.split(" ", 1)
        d = json.loads(doc)
        if kind == "lz4" and d["level"] == 1:
            codecs["lz4"] = d
        elif kind == "zstd" and d["level"] in (1, 3):
            codecs[f"zstd:{d['level']}"] = d
    out["codecs"][name] = codecs
    out["checksum"][name] = json.load(open(f"{lim}/{name}.checksum.json"))
json.dump(out, sys.stdout, indent=1)
EOF
python3 -m json.tool "$WORK/limits.json" >/dev/null || die "limits.json is not valid JSON: $WORK/limits.json"

# ------------------------------------------------------------------ the tools
FAILS=0
# measure DATASET OP COMP TOOL [--set k=v]... -- CMD...   (cold cache, one record in runs.jsonl)
# BASIS=bytes: the bytes the MB/s figure is of (default: the data set's database bytes);
# REAP=s: wait up to s seconds for daemons CMD leaves behind, counting their CPU (peers.py --reap)
LAST_LOG=
measure() {
    local ds=$1 op=$2 comp=$3 tool=$4; shift 4
    local pm=${PM[$ds]:-} more=()
    [[ -n ${BASIS:-} ]] && more+=(--set basis_bytes="$BASIS")
    [[ -n ${REAP:-} ]] && more+=(--reap "$REAP")
    LAST_LOG=$WORK/logs/$ds-$op-${comp/:/}-$tool-$REP.log
    mkdir -p "$WORK/logs"
    if [[ -n ${WARM:-} ]]; then
        # the database in the page cache: every file of its data directory read once
        sync
        find "$WORK/$ds/pgdata" -type f -exec cat {} + >/dev/null 2>&1 || true
    else
        drop_cache
    fi
    if ! $PY measure --out "$RUNS" --log "$LAST_LOG" --server-pid "$pm" --set dataset="$ds" --set op="$op" \
        --set comp="$comp" --set tool="$tool" --set rep="$REP" "${more[@]}" "$@"; then
        log "FAILED: $tool $op $comp on $ds (log below)"
        tail -20 "$LAST_LOG" >&2
        FAILS=$((FAILS + 1))
        return 1
    fi
    return 0
}
# amend the last record with extra keys (JSON object text)
amend() {
    python3 - "$RUNS" "$1" <<'EOF'
import json, sys
path, extra = sys.argv[1], json.loads(sys.argv[2])
lines = open(path).read().splitlines()
rec = json.loads(lines[-1]); rec.update(extra); lines[-1] = json.dumps(rec)
open(path, "w").write("\n".join(lines) + "\n")
EOF
}
target_of() { echo "host=$WORK/sock port=$1 user=postgres dbname=postgres"; }

recman_backup() { # ds port comp tag [op [more `backup database` options...]]
    local ds=$1 port=$2 comp=$3 tag=$4 op=${5:-backup} d=$WORK/$1
    shift $(($# < 5 ? $# : 5))
    measure "$ds" "$op" "$comp" recman -- runuser -u postgres -- "$R" --repo "$d/repo" --pgdata "$d/pgdata" \
        --target "$(target_of "$port")" backup database --channels "$CHANNELS" --compress "$comp" --tag "$tag" "$@" || return 0
    local total sustained budget written diag btype parent
    total=$(sed -n 's/.*total \([0-9.]*\) MB\/s.*/\1/p' "$LAST_LOG" | tail -1)
    sustained=$(sed -n 's/.*sustained \([0-9.]*\) MB\/s.*/\1/p' "$LAST_LOG" | tail -1)
    budget=$(sed -n 's/.*memory budget \([0-9]*\) MiB.*/\1/p' "$LAST_LOG" | tail -1)
    read -r written btype parent < <(as_pg "$R" --repo "$d/repo" list backup --json | python3 -c '
import json, sys
tag = sys.argv[1].upper()
bs = [b for b in json.load(sys.stdin) if b["tag"] == tag]
print(sum(b["written_bytes"] for b in bs), bs[-1].get("type") or "-" if bs else "-",
      bs[-1].get("parent") or "-" if bs else "-")' "$tag")
    diag=$(as_pg "$R" --repo "$d/repo" report io "$tag" --json 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    sys.exit()
d = next((x for x in r.get("diagnosis", []) if x.startswith("bottleneck")), "")
print(d.split(" — ")[0].split(";")[0])') || diag=
    amend "{\"repo_bytes\": ${written:-0}, \"recman_total_mb_s\": ${total:-null}, \"recman_sustained_mb_s\": ${sustained:-null}, \"budget_mib\": ${budget:-null}, \"backup_type\": \"${btype:-}\", \"parent\": \"${parent:-}\", \"note\": $(printf '%s' "$diag" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}"
    LAST_TYPE=$btype LAST_PARENT=$parent
}
recman_delete() { as_pg "$R" --repo "$WORK/$1/repo" delete backup "$2" --noprompt >/dev/null 2>&1 || true; }
recman_id_of() { # ds tag -> backup id
    as_pg "$R" --repo "$WORK/$1/repo" list backup --json | python3 -c '
import json, sys
print(next((b["id"] for b in json.load(sys.stdin) if b["tag"] == sys.argv[1].upper()), ""))' "$2"
}
pgbr_opts() { # comp -> pgBackRest compression options
    case $1 in
        none) echo "--compress-type=none" ;;
        lz4) echo "--compress-type=lz4 --compress-level=1" ;;
        zstd:*) echo "--compress-type=zst --compress-level=${1#zstd:}" ;;
    esac
}
pgbr_backup() { # ds comp [full|incr]
    local ds=$1 comp=$2 type=${3:-full} opts op=backup suffix=F
    [[ $type == incr ]] && { op=incremental; suffix=I; }
    read -r -a opts <<<"$(pgbr_opts "$comp")"
    measure "$ds" "$op" "$comp" pgbackrest -- runuser -u postgres -- pgbackrest --config="$PGBR_CONF" --stanza="$ds" \
        --type="$type" --process-max="$CHANNELS" "${opts[@]}" backup || return 0
    local label
    label=$(find "$WORK/pgbr-repo/backup/$ds" -maxdepth 1 -name "*$suffix" -printf '%f\n' | sort | tail -1)
    amend "{\"repo_bytes\": $(du -sb "$WORK/pgbr-repo/backup/$ds/$label" | cut -f1)}"
}
pgbb_backup() { # ds port comp [op]
    local ds=$1 port=$2 comp=$3 op=${4:-backup} out=$WORK/pgbb-$1 zopt=()
    rm -rf "$out"
    case $comp in
        none) ;;
        lz4) zopt=(--compress=server-lz4:1) ;;
        zstd:*) zopt=(--compress="server-zstd:${comp#zstd:}") ;;
    esac
    measure "$ds" "$op" "$comp" pg_basebackup -- runuser -u postgres -- "$BIN/pg_basebackup" -h "$WORK/sock" -p "$port" \
        -U postgres -D "$out" -Ft -X none -c fast "${zopt[@]}" || return 0
    amend "{\"repo_bytes\": $(du -sb "$out" | cut -f1)}"
    rm -rf "$out"
}

COMPS=(none lz4 zstd:1 zstd:3)
# the incremental's workload: 25 pgbench transactions per client and per unit of scale (at
# scales 1 and 5 this changed 3 % of pgbench_accounts' pages and 16 % of its primary key's)
INCR_TX=$((SCALE * 25))
# The read limit of the cluster's own files, measured in every round beside the tools (the
# fio file above was just written, and a virtual disk's host may still cache it), read-only,
# direct, 1 MiB, queue depth 16: pgbench_accounts' first segment alone ("own"), and every file
# under base/ one after another ("db"), what backup and validate database read: the second is
# the read limit they are held to, with the same read through the page cache ("db buffered",
# the kernel's read-ahead at work): the limit is the better of the two, since recman may read
# either way. fio reads whole MiBs only: files under 1 MiB and the tails of larger ones are left
# out (24 MB of 1.59 GB at scale 100), which makes its job easier.
own_read() {
    drop_cache
    fio --name=own --filename="$ACC_FILE" --readonly --rw=read --bs=1m --iodepth=16 --direct=1 \
        --ioengine=io_uring --output-format=json --output="$LIM/own.json" >/dev/null 2>&1 || { log "fio on $ACC_FILE failed"; return 0; }
    $PY fio "$LIM/own.json" | cut -d' ' -f1 >>"$LIM/own.txt"
    drop_cache
    fio --name=db --opendir="$WORK/pgbench/pgdata/base" --file_service_type=sequential --readonly --rw=read \
        --bs=1m --iodepth=16 --direct=1 --ioengine=io_uring --output-format=json --output="$LIM/db.json" >/dev/null 2>&1 ||
        { log "fio on the cluster's base/ failed"; return 0; }
    $PY fio "$LIM/db.json" | cut -d' ' -f1 >>"$LIM/db.txt"
    drop_cache
    fio --name=dbb --opendir="$WORK/pgbench/pgdata/base" --file_service_type=sequential --readonly --rw=read \
        --bs=1m --iodepth=16 --direct=0 --ioengine=io_uring --output-format=json --output="$LIM/dbb.json" >/dev/null 2>&1 ||
        { log "buffered fio on the cluster's base/ failed"; return 0; }
    $PY fio "$LIM/dbb.json" | cut -d' ' -f1 >>"$LIM/dbb.txt"
    log "  read of the cluster's own files: largest $(tail -1 "$LIM/own.txt") MB/s, all of base/ $(tail -1 "$LIM/db.txt") MB/s direct, $(tail -1 "$LIM/dbb.txt") MB/s buffered"
}
# The write limit a restore is held to, measured in every round before the restores (as
# bench/restore.sh does): fio writing the cluster's size (without pg_wal) where the restores
# write, direct or buffered, queue depth 1 or 16, 1 MiB, an fsync at the end; the best of the
# four. The short fio writes above may end inside a virtual disk's host cache, which a
# cluster's worth of writes outlasts, so they overstate what a restore can reach.
db_write() {
    local best
    best=$(bench_best_write "$WORK/dbw.dat" "$(db_bytes "$WORK/pgbench/pgdata")")
    [[ -n $best ]] || { log "fio write of the cluster's size failed"; return 0; }
    echo "$best" >>"$LIM/dbw.txt"
    log "  write of the cluster's size: best $best MB/s (direct or buffered, depth 1 or 16, fsync at the end)"
}
for ((REP = 1; REP <= REPEAT; REP++)); do
    log "round $REP of $REPEAT"
    own_read
    for comp in "${COMPS[@]}"; do
        [[ $comp == lz4 ]] && continue   # lz4 last: its backups are restored and validated below
        # alternate who goes first
        if ((REP % 2)); then
            recman_backup pgbench "$PORT_MAIN" "$comp" "R$REP${comp/:/}"; pgbr_backup pgbench "$comp"; pgbb_backup pgbench "$PORT_MAIN" "$comp"
        else
            pgbb_backup pgbench "$PORT_MAIN" "$comp"; pgbr_backup pgbench "$comp"; recman_backup pgbench "$PORT_MAIN" "$comp" "R$REP${comp/:/}"
        fi
        recman_delete pgbench "R$REP${comp/:/}"
        log "  backup $comp done"
    done
    # recman's lz4 backup is a level 0 (a full backup that level 1s build on, the same work)
    if ((REP % 2)); then
        recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}LZ4" backup --incremental-level 0; pgbr_backup pgbench lz4; pgbb_backup pgbench "$PORT_MAIN" lz4
    else
        pgbb_backup pgbench "$PORT_MAIN" lz4; pgbr_backup pgbench lz4; recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}LZ4" backup --incremental-level 0
    fi
    log "  backup lz4 done"
    # the same lz4 backups with the database in the page cache (op backup_cached): recman
    # reads each cached file through the cache, pg_basebackup's server always does
    if ((REP % 2)); then
        WARM=1 recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}WARM" backup_cached; WARM=1 pgbb_backup pgbench "$PORT_MAIN" lz4 backup_cached
    else
        WARM=1 pgbb_backup pgbench "$PORT_MAIN" lz4 backup_cached; WARM=1 recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}WARM" backup_cached
    fi
    recman_delete pgbench "R${REP}WARM"
    log "  backup lz4 with the database cached done"
    db_write
    # restore the lz4 backups (pgBackRest's latest is its lz4 one). Each restore is timed with
    # a `sync` after it: what a tool leaves to the kernel's flusher counts, and is written at
    # the profile's rate too (the root blkio group holds the flusher threads).
    rm -rf "$WORK/restore"
    measure pgbench restore lz4 recman -- "$ROOT/bench/then-sync" runuser -u postgres -- "$R" --repo "$WORK/pgbench/repo" \
        restore database --to "$WORK/restore" --from-tag "R${REP}LZ4" --channels "$CHANNELS" || true
    rm -rf "$WORK/restore"; install -d -o postgres -g postgres "$WORK/restore"
    measure pgbench restore lz4 pgbackrest -- "$ROOT/bench/then-sync" runuser -u postgres -- pgbackrest --config="$PGBR_CONF" \
        --stanza=pgbench --process-max="$CHANNELS" --pg1-path="$WORK/restore" restore || true
    rm -rf "$WORK/restore"
    log "  restore done"
    # validate / verify
    measure pgbench validate_backup lz4 recman -- runuser -u postgres -- "$R" --repo "$WORK/pgbench/repo" \
        validate backup "R${REP}LZ4" || true
    measure pgbench verify lz4 pgbackrest -- runuser -u postgres -- pgbackrest --config="$PGBR_CONF" --stanza=pgbench \
        --process-max="$CHANNELS" verify || true
    own_read
    measure pgbench validate_database none recman -- runuser -u postgres -- "$R" --pgdata "$WORK/pgbench/pgdata" \
        --target "$(target_of "$PORT_MAIN")" validate database || true
    # pg_verifybackup reads plain-format backups only (PostgreSQL 15): one plain copy, verified
    if [[ $REP == 1 ]]; then
        rm -rf "$WORK/pgbb-plain"
        as_pg "$BIN/pg_basebackup" -h "$WORK/sock" -p "$PORT_MAIN" -U postgres -D "$WORK/pgbb-plain" -Fp -X none -c fast ||
            { log "FAILED: pg_basebackup -Fp"; FAILS=$((FAILS + 1)); }
    fi
    measure pgbench verify none pg_basebackup -- runuser -u postgres -- "$BIN/pg_verifybackup" -n "$WORK/pgbb-plain" || true
    log "  validate/verify done"
    # incremental: a fixed pgbench workload, then recman's level 1 on this round's lz4 level 0
    # against pgBackRest's incr on its lz4 full (the newest backup of each; pgBackRest's restore
    # and verify above ran before, so they saw only the full)
    as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$PORT_MAIN" -U postgres -n -c 2 -j 2 -t "$INCR_TX" postgres \
        >>"$WORK/pgbench-incr.log" 2>&1 || { tail -20 "$WORK/pgbench-incr.log" >&2; die "pgbench workload failed"; }
    settle "$PORT_MAIN"
    DB_NOW=$(db_bytes "$WORK/pgbench/pgdata")
    PARENT_ID=$(recman_id_of pgbench "R${REP}LZ4")
    LAST_TYPE='' LAST_PARENT=''
    if ((REP % 2)); then
        BASIS=$DB_NOW recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}INC" incremental --incremental-level 1
        BASIS=$DB_NOW pgbr_backup pgbench lz4 incr
    else
        BASIS=$DB_NOW pgbr_backup pgbench lz4 incr
        BASIS=$DB_NOW recman_backup pgbench "$PORT_MAIN" lz4 "R${REP}INC" incremental --incremental-level 1
    fi
    if [[ -n $LAST_TYPE && ($LAST_TYPE != LEVEL1 || $LAST_PARENT != "$PARENT_ID") ]]; then
        log "FAILED: recman's incremental R${REP}INC is $LAST_TYPE on ${LAST_PARENT:-nothing}, not a level 1 on R${REP}LZ4 ($PARENT_ID)"
        FAILS=$((FAILS + 1))
    fi
    recman_delete pgbench "R${REP}INC"
    recman_delete pgbench "R${REP}LZ4"
    log "  incremental done"
    # the incompressible data set: lz4 backups
    recman_backup random "$PORT_RND" lz4 "X${REP}LZ4"; pgbr_backup random lz4; pgbb_backup random "$PORT_RND" lz4
    recman_delete random "X${REP}LZ4"
    log "  random data set done"
    # the small data set: recman's peak memory at a second scale (the same kind of backup)
    recman_backup small "$PORT_SMALL" lz4 "S${REP}LZ4" backup --incremental-level 0
    recman_delete small "S${REP}LZ4"
    log "  small data set done"
    wal_round
done
rm -rf "$WORK/pgbb-plain"

# ------------------------------------------------------------------ report
MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
python3 - "$WORK/meta.json" <<EOF
import json, sys
meta = {
    "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
    "command": "bench/peers.sh --scale $SCALE --random-mb $RANDOM_MB --small-scale $SMALL_SCALE --wal-segments $WAL_SEGS --repeat $REPEAT --channels $CHANNELS$( ((SMOKE)) && echo ' --smoke')$([[ -n $THROTTLE ]] && echo " --throttle $THROTTLE")$( ((BACKLOG)) && echo " --backlog $BACKLOG")",
    "cores": $(nproc),
    "cpu": "$MODEL",
    "memory_gib": $(free -g | awk '/Mem:/{print $2}'),
    "kernel": "$(uname -r)",
    "disk": "$(df --output=source "$WORK" | tail -1)",
    "postgres": "$("$BIN/postgres" --version)",
    "pgbackrest": "$(pgbackrest version)",
    "fio": "$(fio --version)",
    "recman_binary": "${RECMAN_BIN#"$ROOT"/}",
    "recman_commit": "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)",
    "channels": $CHANNELS,
    "repeat": $REPEAT,
    "scale": $SCALE,
    "wall_s": $(($(date +%s) - T0)),
    "datasets": {
        "pgbench": {"db_bytes": $DB_MAIN, "codec_file": "accounts", "what": "pgbench scale $SCALE"},
        "random": {"db_bytes": $DB_RND, "codec_file": "random", "what": "$RANDOM_MB MB of gen_random_bytes rows"},
        "small": {"db_bytes": $DB_SMALL, "codec_file": "accounts", "what": "pgbench scale $SMALL_SCALE"},
        "wal": {"db_bytes": $((WAL_SEGS * SEG_BYTES)), "segments": $WAL_SEGS,
                "what": "$WAL_SEGS WAL segments of pgbench (scale $WAL_SCALE: tpcb-like and a 100-row range update)"},
    },
    "incremental_workload": "pgbench -n -c 2 -j 2 -t $INCR_TX",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
mkdir -p "$OUT_DIR"
if [[ -s $LIM/own.txt ]]; then
    python3 - "$WORK/limits.json" "$LIM/own.txt" "$LIM/db.txt" "$LIM/dbb.txt" "$LIM/dbw.txt" <<'EOF'
import json, os, statistics, sys
path = sys.argv[1]
lim = json.load(open(path))
# each limit measured in every round: the rounds' median, and the rounds themselves
for key, runs_key, f in (
    ("read_direct_own_1m_qd16", "read_direct_own_runs", sys.argv[2]),
    ("read_direct_db_1m_qd16", "read_direct_db_runs", sys.argv[3]),
    ("read_buffered_db_1m_qd16", "read_buffered_db_runs", sys.argv[4]),
    ("write_db_best_1m", "write_db_runs", sys.argv[5]),
):
    runs = [float(x) for x in open(f).read().split()] if os.path.exists(f) else []
    if runs:
        lim[key] = statistics.median(runs)
        lim[runs_key] = runs
json.dump(lim, open(path, "w"), indent=1)
EOF
fi
$PY report --runs "$RUNS" --limits "$WORK/limits.json" --meta "$WORK/meta.json" \
    --json "$OUT_DIR/latest.json" --md "$OUT_DIR/latest.md"
cp "$RUNS" "$OUT_DIR/latest-runs.jsonl"
log "written: $OUT_DIR/latest.md, $OUT_DIR/latest.json ($(($(date +%s) - T0)) s in all)"
if ((BACKLOG > 0)); then
    # The drain needs its own cluster and about 16 GB plus 2 x RUNS x N segments of disk: this
    # run's clusters and repositories go first (the binary stays), and the drain sets the same
    # throttle on its own work dir.
    log "WAL backlog drain of $BACKLOG segments, $REPEAT run(s) (bench/wal-backlog.sh)"
    for d in "${PIDS_TO_STOP[@]}"; do
        runuser -u postgres -- "$BIN/pg_ctl" -D "$d" -m fast stop >/dev/null 2>&1 || true
    done
    PIDS_TO_STOP=()
    find "$WORK" -mindepth 1 -maxdepth 1 ! -name recman -exec rm -rf {} +
    bench_throttle_off
    backlog_out=$(THROTTLE=$THROTTLE SEGMENTS=$BACKLOG RUNS=$REPEAT PGBIN=$BIN bash "$ROOT/bench/wal-backlog.sh" "$R") ||
        die "the WAL backlog drain failed (its messages above)"
    printf '%s\n' "$backlog_out" >&2
    {
        printf '\n### WAL backlog drain (bench/wal-backlog.sh, the same run and profile)\n\n```\n'
        printf '%s\n' "$backlog_out"
        printf '```\n'
    } >>"$OUT_DIR/latest.md"
    log "appended the drain to $OUT_DIR/latest.md ($(($(date +%s) - T0)) s in all)"
fi
((FAILS == 0)) || die "$FAILS tool run(s) failed (logs above)"
