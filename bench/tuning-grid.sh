#!/usr/bin/env bash
# The tuning targets of docs/tuning.md, measured: for each scenario (a real bottleneck made
# by the kernel's cgroup v1 block-I/O throttle or CPU quota, or none), a grid search over channels and
# compression gives the best time; then `advise`'s settings, `--tune auto` and the default
# settings run the same backup, interleaved with the grid's best point run again. Prints, per
# scenario, each run's seconds, the ratios best/advise, best/auto and best/default (1.00 = as
# fast as the grid's best, timed beside them), and advise's predicted duration against the
# measured one. Cold cache before every run. Reports;
# asserts nothing. Run as root (cgroups, dropping the page cache, PostgreSQL as postgres).
#
#   bench/tuning-grid.sh [RECMAN_BINARY]
#   env: SCALE=20 SCENARIOS="free read write" READ_BPS=40M WRITE_BPS=15M CPU_CORES=0.5
#        SLOW_READ_BPS=300M SLOW_WRITE_BPS=250M (scenario slow: both at once, the peers' profile)
#        CHANNELS="1 2 4" COMPRESS="none lz4 zstd:1 zstd" REPEAT=1 REPO_LIMIT=12G PGBIN WORK
#        CALIBRATE_FIRST=0 OUT=bench/results/tuning-grid.jsonl
#   REPEAT=N runs every backup N times and takes the median: at scale 20 on a shared machine
#   one run of the same settings varies by a factor of 2, and the best of a grid of single runs
#   is its luckiest draw.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath "${1:-$ROOT/target/release/recman}")
SCALE=${SCALE:-20}
SCENARIOS=${SCENARIOS:-free read write}
READ_BPS=${READ_BPS:-40M}
SLOW_READ_BPS=${SLOW_READ_BPS:-300M}
SLOW_WRITE_BPS=${SLOW_WRITE_BPS:-250M}
WRITE_BPS=${WRITE_BPS:-15M}
CPU_CORES=${CPU_CORES:-0.5}
CHANNELS=${CHANNELS:-1 2 4}
COMPRESS=${COMPRESS:-none lz4 zstd:1 zstd}
REPEAT=${REPEAT:-1}
REPO_LIMIT=${REPO_LIMIT:-12G}
CALIBRATE_FIRST=${CALIBRATE_FIRST:-0}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
OUT=${OUT:-$ROOT/bench/results/tuning-grid.jsonl}
PORT=${PORT:-55941}
[[ $EUID -eq 0 ]] || { echo "tuning-grid: run as root (cgroups, drop_caches)" >&2; exit 1; }
[[ -x $BIN ]] || { echo "tuning-grid: no recman binary at $BIN; hint: cargo build --release" >&2; exit 1; }
BLKIO=/sys/fs/cgroup/blkio
[[ -e $BLKIO/blkio.throttle.read_bps_device ]] ||
    { echo "tuning-grid: no cgroup v1 blkio controller at $BLKIO" >&2; exit 1; }
WORK=${WORK:-$(mktemp -d /tmp/recman-tuning-grid.XXXXXX)}
chmod 755 "$WORK"
chown postgres "$WORK"
GROUP=$BLKIO/recman-tuning-grid-$$
# The cpu scenario's CPU limit: a cgroup v1 CFS quota, as a container's CPU limit sets it.
CPU_GROUP=/sys/fs/cgroup/cpu/recman-tuning-grid-$$
[[ $SCENARIOS != *cpu* || -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]] ||
    { echo "tuning-grid: no cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }
as_pg() { su postgres -s /bin/bash -c "$*"; }
D=$WORK/data
cleanup() {
    as_pg "$PGBIN/pg_ctl -D $D -m immediate stop" >/dev/null 2>&1 || true
    rmdir "$GROUP" "$CPU_GROUP" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
bytes() { numfmt --from=iec "$1"; }
# The device that holds both the data directory and the repository (one disk here).
DISK=$(stat -c '%Hd:%Ld' "$WORK")

# Scenario NAME: the throttle put on every recman process of the scenario.
throttle() {
    rmdir "$GROUP" "$CPU_GROUP" 2>/dev/null || true
    mkdir "$GROUP" "$CPU_GROUP"
    case $1 in
    free) ;;
    cpu) echo "$CPU_CORES * 100000 / 1" | bc >"$CPU_GROUP/cpu.cfs_quota_us" ;;
    read) echo "$DISK $(bytes "$READ_BPS")" >"$GROUP/blkio.throttle.read_bps_device" ;;
    write) echo "$DISK $(bytes "$WRITE_BPS")" >"$GROUP/blkio.throttle.write_bps_device" ;;
    # The slower disk of bench/peers.sh --throttle: reads and writes held at once.
    slow)
        echo "$DISK $(bytes "$SLOW_READ_BPS")" >"$GROUP/blkio.throttle.read_bps_device"
        echo "$DISK $(bytes "$SLOW_WRITE_BPS")" >"$GROUP/blkio.throttle.write_bps_device"
        ;;
    *) echo "tuning-grid: unknown scenario $1 (free, read, write, slow, cpu)" >&2; exit 1 ;;
    esac
    chmod 666 "$GROUP/cgroup.procs" "$CPU_GROUP/cgroup.procs"
}
# recman ARGS... inside the scenario's cgroup, as postgres.
rm_in() {
    as_pg "echo \$\$ > $GROUP/cgroup.procs && echo \$\$ > $CPU_GROUP/cgroup.procs && exec $BIN --repo $WORK/repo --pgdata $D --target 'host=$WORK port=$PORT user=postgres dbname=postgres' $*"
}
drop_cache() { sync; echo 3 >/proc/sys/vm/drop_caches; }
calibrate_cold() { drop_cache; rm_in calibrate -q >/dev/null; }
# The repository's size in bytes (du complains when SQLite's -wal file goes while it counts;
# the total still stands).
repo_bytes() { { du -sb "$WORK/repo/" 2>/dev/null || true; } | cut -f1; }
# timed_backup LABEL FLAGS...: one cold backup, its seconds on stdout.
timed_backup() {
    local label=$1 t0 t1 before big
    shift
    before=$(repo_bytes)
    drop_cache
    t0=$(date +%s.%N)
    rm_in backup database --tag "$label" -q "$@" >"$WORK/$label.log" 2>&1 ||
        { echo "tuning-grid: backup $label failed:" >&2; cat "$WORK/$label.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    # Backups stay, so that advise learns the start and stop costs and how its model fared
    # from the catalog's backups; past REPO_LIMIT the largest go first (at scale 100 an
    # uncompressed one is 1.5 GB and the grid takes dozens, a compressed one tens of MB), so
    # that the compressed points all stay. The sizes are kept in a file: this runs in a
    # command substitution's subshell.
    echo "$(($(repo_bytes) - before)) $label" >>"$WORK/kept"
    while (($(repo_bytes) > $(bytes "$REPO_LIMIT"))) && [[ -s $WORK/kept ]]; do
        big=$(sort -n "$WORK/kept" | tail -1 | cut -d' ' -f2)
        rm_in delete backup "${big^^}" --noprompt >/dev/null 2>&1 ||
            { echo "tuning-grid: could not delete backup $big" >&2; exit 1; }
        grep -v " $big\$" "$WORK/kept" >"$WORK/kept.new" || true
        mv "$WORK/kept.new" "$WORK/kept"
    done
    echo "$t1 - $t0" | bc
}
# median_backup LABEL FLAGS...: REPEAT cold backups, the median of their seconds on stdout.
median_backup() {
    local label=$1 i times=()
    shift
    for ((i = 1; i <= REPEAT; i++)); do times+=("$(timed_backup "$label-$i" "$@")"); done
    printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

as_pg "$PGBIN/initdb -D $D --data-checksums -A trust" >/dev/null
cat >>"$D/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
wal_level = replica
archive_mode = on
archive_command = '$BIN --repo $WORK/repo archive-push %p'
autovacuum = off
max_wal_size = 4GB
CONF
as_pg "$PGBIN/pg_ctl -D $D -l $WORK/log -w start" >/dev/null
as_pg "$PGBIN/pgbench -q -i -s $SCALE -h $WORK -p $PORT postgres" >/dev/null 2>&1
size=$(du -sb "$D/base" | cut -f1)
echo "tuning-grid: pgbench scale $SCALE, base/ $((size >> 20)) MiB, disk $DISK, $(nproc) cores, recman $($BIN --version 2>/dev/null || echo '?')"
mkdir -p "$(dirname "$OUT")"

for scenario in $SCENARIOS; do
    # A repository per scenario, so that every backup is a full one of the same size; the
    # archive_command's path is a symbolic link switched between them. The last scenario's
    # goes first: at scale 100 one holds some 4 GB of backups.
    rm -rf "$WORK/repo" "$WORK"/repo-*
    mkdir "$WORK/repo-$scenario"
    chown postgres "$WORK/repo-$scenario"
    ln -sfn "$WORK/repo-$scenario" "$WORK/repo"
    : >"$WORK/kept"
    as_pg "$BIN --repo $WORK/repo create catalog" >/dev/null
    as_pg "$BIN --repo $WORK/repo --pgdata $D --target 'host=$WORK port=$PORT user=postgres dbname=postgres' register database --name grid" >/dev/null
    throttle "$scenario"
    # CALIBRATE_FIRST=1 calibrates before the grid's points, as a DBA who calibrated once
    # and backed up since: advise's history factor then counts the points.
    [[ $CALIBRATE_FIRST != 1 ]] || calibrate_cold
    declare -A grid=()
    best=
    best_at=
    for c in $CHANNELS; do
        for z in $COMPRESS; do
            s=$(median_backup "g-$c-$z" --channels "$c" --compress "$z")
            grid["$c/$z"]=$s
            echo "  $scenario grid channels $c compress $z: $s s"
            if [[ -z $best ]] || (($(echo "$s < $best" | bc))); then best=$s best_at="$c/$z"; fi
        done
    done
    # calibrate and advise after the grid, as a DBA would run them: with backups in the
    # catalog advise knows the start and stop costs (checkpoint, WAL archiving) and adds them
    # to its prediction, and the device is measured as the backups below will find it.
    [[ $CALIBRATE_FIRST == 1 ]] || calibrate_cold
    advice=$(rm_in advise --json)
    read -r a_flags predicted bottleneck model_predicted history_factor < <(python3 -c '
import json, sys
a = json.loads(sys.argv[1]); s = a["settings"]
f = ["--channels", s["channels"], "--compress", s["compress"], "--filesperset", s["filesperset"],
     "--maxopenfiles", s["maxopenfiles"], "--input-buffers", s["input_buffers"],
     "--input-buffer-size", "%dK" % (s["input_buffer_size"] >> 10)]
if s.get("section_size"): f += ["--section-size", "%dM" % (s["section_size"] >> 20)]
if not s.get("direct_reads", True): f += ["--buffered-reads"]
# The model alone beside it: the data phase before the history factor.
k = a.get("history_factor", 1.0)
model = (a["predicted_seconds"] - a["fixed_seconds"]) / k + a["fixed_seconds"]
for st in a["steps"]:
    if st["step"] in ("history", "start and stop"):
        print("  advise %s: %s (%s)" % (st["step"], st["choice"], st["because"]), file=sys.stderr)
print(",".join(map(str, f)), "%.2f" % a["predicted_seconds"], a["bottleneck"], "%.2f" % model, "%.3f" % k)' "$advice")
    IFS=, read -r -a af <<<"$a_flags"
    # The grid's best point again, interleaved with advise's settings, auto and the defaults
    # (the order rotating each round): the device drifts over the minutes a grid takes, and a
    # grid's best is its luckiest draw, so each ratio below is of times taken side by side.
    bc_=${best_at%/*} bz=${best_at#*/}
    declare -A took=([best]="" [advised]="" [auto]="" [default]="")
    for ((i = 1; i <= REPEAT; i++)); do
        order=(best advised auto default)
        order=("${order[@]:$(((i - 1) % 4))}" "${order[@]:0:$(((i - 1) % 4))}")
        for what in "${order[@]}"; do
            case $what in
                best) t=$(timed_backup "best-$i" --channels "$bc_" --compress "$bz") ;;
                advised) t=$(timed_backup "advised-$i" "${af[@]}") ;;
                auto) t=$(timed_backup "auto-$i" --tune auto) ;;
                default) t=$(timed_backup "default-$i") ;;
            esac
            took[$what]+="$t "
        done
    done
    med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    again=$(med "${took[best]}")
    adv=$(med "${took[advised]}")
    auto=$(med "${took[auto]}")
    dflt=$(med "${took[default]}")
    ratio() { echo "scale=2; $again / $1" | bc; }
    echo "$scenario: grid best $best s (channels/compress $best_at), $again s again beside the others; advise ($bottleneck: ${af[*]}) $adv s, ratio $(ratio "$adv"), predicted $predicted s = $(echo "scale=2; $predicted / $adv" | bc) x measured (the model alone $model_predicted s = $(echo "scale=2; $model_predicted / $adv" | bc) x, history factor $history_factor); --tune auto $auto s, ratio $(ratio "$auto"); defaults $dflt s, ratio $(ratio "$dflt")"
    python3 -c '
import json, sys
k = sys.argv
print(json.dumps({"scenario": k[1], "scale": int(k[2]), "grid_best_seconds": float(k[3]), "grid_best": k[4],
  "advise_seconds": float(k[5]), "advise_predicted_seconds": float(k[6]), "advise_bottleneck": k[7],
  "advise_flags": k[8], "auto_seconds": float(k[9]), "default_seconds": float(k[10]),
  "read_bps": k[11], "write_bps": k[12], "repeat": int(k[13]), "loadavg": k[14],
  "best_again_seconds": float(k[15]), "cpu_cores": float(k[16]) if k[1] == "cpu" else None,
  "advise_model_seconds": float(k[17]), "advise_history_factor": float(k[18]),
  "calibrate_first": k[19] == "1"}))' "$scenario" "$SCALE" "$best" "$best_at" "$adv" "$predicted" \
        "$bottleneck" "${af[*]}" "$auto" "$dflt" "$READ_BPS" "$WRITE_BPS" "$REPEAT" "$(cut -d' ' -f1-3 /proc/loadavg)" "$again" "$CPU_CORES" "$model_predicted" "$history_factor" "$CALIBRATE_FIRST" >>"$OUT"
    unset grid took
done
echo "tuning-grid: one line per scenario appended to $OUT"
