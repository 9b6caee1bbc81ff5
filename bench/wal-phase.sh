# shellcheck shell=bash
# The WAL phase of bench/peers.sh (sourced by it; uses its WORK, R, BIN, PGBR_CONF, CHANNELS,
# measure, amend, as_pg, psql_at, make_cluster, log, die). Issue 4's WAL targets:
#
#   archive-push  N segments through each tool's archive command, called the way PostgreSQL's
#                 archiver calls it (bench/walsim.py push: archive_status/*.ready in name order,
#                 cwd = data directory, %p = pg_wal/<seg>, .ready renamed to .done after each
#                 success), into an empty archive each time. recman: `recman archive-push`;
#                 pgBackRest: `archive-push` with archive-async=y, process-max = channels.
#   archive-get   the same N segments back the way recovery asks for them (walsim.py get:
#                 %f = <seg>, %p = pg_wal/RECOVERYXLOG, the file checked and removed after
#                 each call). pgBackRest: archive-get with archive-async=y and its queue.
#   replay        a plain base copy taken before the N segments were written, recovered to the
#                 end of that WAL: restore_command = recman archive-get, = cp from a local
#                 directory (PostgreSQL replaying by itself), = pgBackRest archive-get (async).
#                 Timed from pg_ctl start to the end of recovery (postmaster.pid "ready",
#                 after the end-of-recovery checkpoint; hot_standby = off, or "ready" would
#                 come at the consistent point).
#
# The WAL comes from a third cluster, walgen (pgbench scale WAL_SCALE, archive_mode off,
# checkpoint_timeout 1d, wal_keep_size above N segments): pgbench's tpcb-like script and a
# 100-row range update, 1:1, in runs of a few seconds, with VACUUM and CHECKPOINT every ~30 s,
# until N segments after the base copy's start are complete. MB/s = N x 16 MiB / wall time.

SEG_BYTES=$((16 << 20))
WALSIM=(python3 "$ROOT/bench/walsim.py")
WAL_PUSH_OPTS=()

lsn_int() { # "X/Y" -> integer
    local hi=${1%/*} lo=${1#*/}
    echo $(((16#$hi << 32) + 16#$lo))
}
seg_name() { # segment number -> file name on timeline 1
    printf '%08X%08X%08X' 1 $(($1 / 256)) $(($1 % 256))
}

# pgBackRest's async archive-push/-get processes outlive the command that started them: wait
# until walgen's archive lock is free before the archive is touched again.
pgbr_wait_idle() {
    local lock=$WORK/pgbr-lock/walgen-archive.lock i
    for ((i = 0; i < 1200; i++)); do
        [[ -e $lock ]] || return 0
        as_pg flock -n "$lock" true 2>/dev/null && return 0
        sleep 0.1
    done
    log "pgBackRest's async process still holds $lock after 120 s"
}

wal_setup() {
    local port=$1 d=$WORK/walgen i cur start_lsn target
    log "WAL phase: cluster walgen, pgbench scale $WAL_SCALE, $WAL_SEGS segments"
    make_cluster walgen "$port" "archive_mode = off
checkpoint_timeout = 1d
max_wal_size = $(((WAL_SEGS + 64) * 16))MB
wal_keep_size = $(((WAL_SEGS + 64) * 16))MB
synchronous_commit = off"
    # make_cluster wrote [walgen] last: these lines belong to it
    cat >> "$PGBR_CONF" <<CONF
archive-async=y
process-max=$CHANNELS
archive-get-queue-max=128MB
CONF
    # recman's repository as registered, with no WAL: each archive-push run starts from a copy
    cp -a "$d/repo" "$d/repo.empty"
    as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$port" -U postgres -i -s "$WAL_SCALE" -q postgres >"$d/pgbench-init.log" 2>&1 ||
        { cat "$d/pgbench-init.log" >&2; die "pgbench -i on walgen failed"; }
    as_pg "$BIN/pg_basebackup" -h "$WORK/sock" -p "$port" -U postgres -D "$d/base" -Fp -X stream -c fast ||
        die "pg_basebackup of walgen failed"
    start_lsn=$(sed -n 's/^START WAL LOCATION: \([0-9A-F]*\/[0-9A-F]*\).*/\1/p' "$d/base/backup_label")
    [[ -n $start_lsn ]] || die "no START WAL LOCATION in $d/base/backup_label"
    WAL_FIRST=$(($(lsn_int "$start_lsn") / SEG_BYTES))
    target=$(((WAL_FIRST + WAL_SEGS) * SEG_BYTES))
    cat > "$d/range.sql" <<'SQL'
\set aid random(1, 100000 * :scale)
update pgbench_accounts set abalance = abalance + 1 where aid between :aid and :aid + 99;
SQL
    chmod 644 "$d/range.sql"
    local t0 runs=0 secs=$((SMOKE ? 2 : 5))
    t0=$(date +%s)
    while :; do
        cur=$(lsn_int "$(psql_at "$port" "select pg_current_wal_lsn()")")
        ((cur >= target)) && break
        as_pg "$BIN/pgbench" -h "$WORK/sock" -p "$port" -U postgres -n -c 2 -j 2 -T "$secs" \
            -b tpcb-like@1 -f "$d/range.sql@1" postgres >>"$d/pgbench-run.log" 2>&1 ||
            { tail -20 "$d/pgbench-run.log" >&2; die "pgbench on walgen failed"; }
        runs=$((runs + 1))
        if ((runs * secs % 30 == 0)); then
            psql_at "$port" "vacuum pgbench_accounts" >/dev/null
            psql_at "$port" "checkpoint" >/dev/null
        fi
    done
    as_pg "$BIN/pg_ctl" -D "$d/pgdata" -m fast stop >/dev/null
    WALSRC=$WORK/walsrc
    install -d -o postgres -g postgres "$WALSRC"
    : > "$WORK/walsrc.txt"
    for ((i = WAL_FIRST; i < WAL_FIRST + WAL_SEGS; i++)); do
        local n
        n=$(seg_name "$i")
        [[ -f $d/pgdata/pg_wal/$n ]] || die "walgen's pg_wal lacks $n (wal_keep_size too small?)"
        ln "$d/pgdata/pg_wal/$n" "$WALSRC/$n" 2>/dev/null || cp -a "$d/pgdata/pg_wal/$n" "$WALSRC/$n"
        echo "$n" >> "$WORK/walsrc.txt"
    done
    chmod 644 "$WORK/walsrc.txt"
    log "  $WAL_SEGS segments from $(seg_name "$WAL_FIRST") in $(($(date +%s) - t0)) s of pgbench"
    # recman archive-push: pass the batching options when this build has them
    if "$R" archive-push --help 2>/dev/null | grep -q -- '--parallel'; then
        WAL_PUSH_OPTS+=(--parallel "$CHANNELS")
    fi
}

# a fresh fake data directory with the N segments marked .ready
wal_fake_push() {
    rm -rf "$WORK/walfake"
    as_pg "${WALSIM[@]}" fake --pgdata "$WORK/walfake" --control "$WORK/walgen/pgdata/global/pg_control" \
        --segs "$WALSRC" --list "$WORK/walsrc.txt"
}
wal_fake_get() {
    rm -rf "$WORK/walfake"
    install -d -o postgres -g postgres "$WORK/walfake" "$WORK/walfake/global" "$WORK/walfake/pg_wal"
    install -o postgres -g postgres -m 600 "$WORK/walgen/pgdata/global/pg_control" "$WORK/walfake/global/pg_control"
}
wal_basis() { echo $((WAL_SEGS * SEG_BYTES)); }

wal_push() { # tool
    local tool=$1 cmd
    if [[ $tool == recman ]]; then
        rm -rf "$WORK/walgen/repo"; cp -a "$WORK/walgen/repo.empty" "$WORK/walgen/repo"
        cmd="$R --repo $WORK/walgen/repo archive-push ${WAL_PUSH_OPTS[*]} %p"
    else
        pgbr_wait_idle
        rm -rf "$WORK/pgbr-repo/archive/walgen/15-1" "$WORK/pgbr-spool/archive/walgen"
        cmd="pgbackrest --config=$PGBR_CONF --stanza=walgen --pg1-path=$WORK/walfake archive-push %p"
    fi
    wal_fake_push
    BASIS=$(wal_basis) REAP=120 measure wal archive_push lz4 "$tool" -- runuser -u postgres -- \
        "${WALSIM[@]}" push --pgdata "$WORK/walfake" --cmd "$cmd" || return 0
    local stored
    if [[ $tool == recman ]]; then
        stored=$(du -sb "$WORK/walgen/repo/walgen/wal" 2>/dev/null | cut -f1)
    else
        stored=$(du -sb "$WORK/pgbr-repo/archive/walgen/15-1" 2>/dev/null | cut -f1)
    fi
    amend "{\"repo_bytes\": ${stored:-0}}"
}

wal_get() { # tool
    local tool=$1 cmd
    if [[ $tool == recman ]]; then
        cmd="$R --repo $WORK/walgen/repo archive-get %f %p"
    else
        pgbr_wait_idle
        rm -rf "$WORK/pgbr-spool/archive/walgen/in"
        cmd="pgbackrest --config=$PGBR_CONF --stanza=walgen --pg1-path=$WORK/walfake archive-get %f %p"
    fi
    wal_fake_get
    BASIS=$(wal_basis) REAP=120 measure wal archive_get lz4 "$tool" -- runuser -u postgres -- \
        "${WALSIM[@]}" get --pgdata "$WORK/walfake" --list "$WORK/walsrc.txt" --cmd "$cmd" || true
}

wal_replay() { # tool: recman | local | pgbackrest
    local tool=$1 rd=$WORK/replay cmd comp=lz4
    case $tool in
        recman) cmd="$R --repo $WORK/walgen/repo archive-get %f %p" ;;
        local) cmd="cp $WALSRC/%f %p"; comp=none ;;
        pgbackrest) cmd="pgbackrest --config=$PGBR_CONF --stanza=walgen --pg1-path=$rd archive-get %f %p" ;;
    esac
    pgbr_wait_idle
    rm -rf "$WORK/pgbr-spool/archive/walgen/in"
    rm -rf "$rd"
    cp -a "$WORK/walgen/base" "$rd"
    as_pg touch "$rd/recovery.signal"
    cat >> "$rd/postgresql.conf" <<CONF
port = $PORT_REPLAY
restore_command = '$cmd'
hot_standby = off
CONF
    local slog=$WORK/logs/replay-$tool-$REP.server.log
    mkdir -p "$WORK/logs"; chown postgres: "$WORK/logs"
    rm -f "$slog"
    local ok=1
    BASIS=$(wal_basis) measure wal replay "$comp" "$tool" -- runuser -u postgres -- \
        "${WALSIM[@]}" replay --pgdata "$rd" --bin "$BIN" --log "$slog" --timeout 3600 || ok=0
    if ((ok)); then
        local cpu redo need
        cpu=$(sed -n 's/^server_cpu_s \([0-9.]*\)$/\1/p' "$LAST_LOG")
        redo=$(sed -n 's/.*redo done at \([0-9A-F]*\/[0-9A-F]*\).*/\1/p' "$slog" | tail -1)
        need=$(((WAL_FIRST + WAL_SEGS - 1) * SEG_BYTES))
        if [[ -z $redo ]] || (($(lsn_int "$redo") < need)); then
            log "FAILED: replay via $tool ended at ${redo:-?}, before segment $(seg_name $((WAL_FIRST + WAL_SEGS - 1))) (log $slog)"
            tail -5 "$slog" >&2
            FAILS=$((FAILS + 1))
            amend "{\"rc\": 1, \"redo_done_at\": \"${redo:-}\"}"
        else
            amend "{\"server_cpu_s\": ${cpu:-0}, \"redo_done_at\": \"$redo\"}"
        fi
    fi
    as_pg "$BIN/pg_ctl" -D "$rd" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$rd"
}

# one round: push, get and replay, who goes first alternating with the round
wal_round() {
    local first=recman second=pgbackrest
    if ((REP % 2 == 0)); then first=pgbackrest; second=recman; fi
    wal_push "$first"; wal_push "$second"
    wal_get "$first"; wal_get "$second"
    pgbr_wait_idle
    log "  WAL archive-push/-get done"
    if ((REP % 2)); then
        wal_replay recman; wal_replay local; wal_replay pgbackrest
    else
        wal_replay pgbackrest; wal_replay local; wal_replay recman
    fi
    pgbr_wait_idle
    log "  WAL replay done"
}
