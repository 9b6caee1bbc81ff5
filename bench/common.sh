# Helpers the benchmark scripts share; sourced, not run.
#
# A slower device profile for a whole run: THROTTLE=READ_BPS:WRITE_BPS (e.g. 300M:250M) holds
# every read and write of the disk under DIR at those rates, through the cgroup v1 block-I/O
# throttle of the ROOT group. The root group, not a group of the tools' own: a child group's
# limit holds its processes' direct writes and the writeback their own fsync(2) starts, but not
# the writeback of the kernel's flusher threads (sync(2), syncfs(2), background writeback),
# which run in the root group (300 MB written and synced at a 50 MB/s child-group limit took
# 0.9 s; at a root-group limit, 8.6 s). A child group's limit would let a tool that leaves its
# writes to the flusher go faster than the profile. Everything else on the machine is held too.

BENCH_BLKIO=/sys/fs/cgroup/blkio
BENCH_THROTTLED_DEV=

# bench_throttle_on DIR SPEC: SPEC is READ_BPS:WRITE_BPS; the device is the one holding DIR.
bench_throttle_on() {
    local dir=$1 spec=$2
    [[ $spec =~ ^[0-9]+[KMG]?:[0-9]+[KMG]?$ ]] || {
        echo "throttle $spec: give READ_BPS:WRITE_BPS, e.g. 300M:250M" >&2
        return 1
    }
    [[ -e $BENCH_BLKIO/blkio.throttle.read_bps_device ]] || {
        echo "no cgroup v1 blkio controller at $BENCH_BLKIO; hint: the throttled profile needs it" >&2
        return 1
    }
    BENCH_THROTTLED_DEV=$(stat -c '%Hd:%Ld' "$dir")
    echo "$BENCH_THROTTLED_DEV $(numfmt --from=iec "${spec%%:*}")" >"$BENCH_BLKIO/blkio.throttle.read_bps_device"
    echo "$BENCH_THROTTLED_DEV $(numfmt --from=iec "${spec##*:}")" >"$BENCH_BLKIO/blkio.throttle.write_bps_device"
}

# bench_throttle_off: lifts what bench_throttle_on set (for an EXIT trap).
bench_throttle_off() {
    [[ -n $BENCH_THROTTLED_DEV ]] || return 0
    echo "$BENCH_THROTTLED_DEV 0" >"$BENCH_BLKIO/blkio.throttle.read_bps_device" || true
    echo "$BENCH_THROTTLED_DEV 0" >"$BENCH_BLKIO/blkio.throttle.write_bps_device" || true
    BENCH_THROTTLED_DEV=
}

# bench_cold: writes back and drops the page cache.
bench_cold() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}

# bench_best_write FILE BYTES: the best MB/s of fio writing BYTES to FILE four ways (direct or
# buffered, queue depth 1 or 16, 1 MiB, an fsync at the end), each from a cold cache: the write
# limit a restore of BYTES is held to. Prints nothing when fio fails; FILE is removed.
bench_best_write() {
    local file=$1 bytes=$2 best=0 r direct depth
    for direct in 1 0; do
        for depth in 1 16; do
            bench_cold
            fio --name=w --filename="$file" --size="$bytes" --rw=write --bs=1m --direct=$direct \
                --iodepth=$depth --ioengine=io_uring --end_fsync=1 --output-format=json \
                --output="$file.json" >/dev/null 2>&1 || { rm -f "$file" "$file.json"; return 0; }
            rm -f "$file"
            r=$(python3 "$(dirname "${BASH_SOURCE[0]}")/peers.py" fio "$file.json" | cut -d' ' -f2)
            r=${r%.*}
            ((r > best)) && best=$r
        done
    done
    rm -f "$file.json"
    echo "$best"
}

# bench_median N...: the median of the numbers.
bench_median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# as_pg CMD...: runs CMD as the postgres OS user.
as_pg() { runuser -u postgres -- "$@"; }

# bench_pg_work NAME: a work directory /tmp/NAME.XXXXXX owned by postgres (WORK), the data
# directory to make in it (PG), a random PORT, and an EXIT trap that stops the cluster at
# $PGBIN, lifts the throttle and removes WORK; then THROTTLE, if set, on WORK's disk. Needs
# PGBIN and a `fail` function.
bench_pg_work() {
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 755 "$WORK"
    chown postgres: "$WORK"
    PG=$WORK/pg
    PORT=$((20000 + RANDOM % 20000))
    trap bench_pg_work_end EXIT
    [[ -z ${THROTTLE:-} ]] || bench_throttle_on "$WORK" "$THROTTLE" || fail "bad THROTTLE"
}
bench_pg_work_end() {
    as_pg "$PGBIN/pg_ctl" -D "$PG" -m immediate stop >/dev/null 2>&1 || true
    bench_throttle_off
    rm -rf "$WORK"
}
