#!/usr/bin/env python3
"""Helper of bench/peers.sh (stdlib only).

  peers.py measure --out RUNS.jsonl --log FILE [--server-pid PID] [--reap S] [--set k=v]... -- CMD...
      runs CMD, appends one JSON record (wall s, user/sys CPU s and peak RSS of CMD and every
      child it waited for, PostgreSQL server CPU s during the run, rc) and exits with CMD's rc.
      --reap S: also adopt the daemons CMD starts (child subreaper) and wait up to S seconds
      after CMD's end for them to exit; their CPU and RSS count, the wall time stays CMD's.
  peers.py fio FILE.json            prints "read_MBps write_MBps" of a fio --output-format=json
  peers.py codec FILE.txt           parses `lz4 -b` / `zstd -b` output into JSON lines
  peers.py report --runs RUNS.jsonl --limits LIMITS.json --meta META.json --json OUT.json
                  --md OUT.md       the table (markdown, also printed) and the same as JSON
"""
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

MB = 1e6
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- measure
def _proc_cpu(pid):
    """(own utime+stime, reaped children's cutime+cstime) of a pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime is field 14 -> index 11
    ut, st, cut, cst = (int(x) for x in fields[11:15])
    return (ut + st) / TICK, (cut + cst) / TICK, int(fields[1])


def server_cpu(pm_pid):
    """All CPU time the postmaster tree has used so far: itself, its reaped children and its
    live children. Conserved across a child's exit, so a difference is the CPU in between."""
    if not pm_pid:
        return 0.0
    try:
        own, reaped, _ = _proc_cpu(pm_pid)
    except OSError:
        return 0.0
    total = own + reaped
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == pm_pid:
            continue
        try:
            o, _r, ppid = _proc_cpu(int(d))
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pm_pid:
            total += o
    return total


def _subreaper():
    """Become the child subreaper: a daemon that CMD leaves behind (pgBackRest's async
    archive-push/-get process) is reparented to this process, so that it can be waited for and
    its CPU time and peak RSS counted."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans(limit_s):
    """Waits (at most limit_s) for the daemons CMD left behind; seconds waited past CMD's end."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.05)
    return round(time.monotonic() - t0, 3)


def cmd_measure(argv):
    out = log = None
    pm = 0
    reap = 0
    extra = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "--out":
            out = argv[i + 1]
        elif a == "--log":
            log = argv[i + 1]
        elif a == "--server-pid":
            pm = int(argv[i + 1] or 0)
        elif a == "--reap":
            reap = float(argv[i + 1])
        elif a == "--set":
            k, v = argv[i + 1].split("=", 1)
            extra[k] = _num(v)
        else:
            sys.exit(f"measure: unknown option {a}")
        i += 2
    cmd = argv[i:]
    if not cmd or not out or not log:
        sys.exit("measure: need --out, --log and a command")
    if reap:
        _subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = server_cpu(pm)
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    s1 = server_cpu(pm)
    if reap:
        extra["orphans_s"] = _reap_orphans(reap)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec = dict(extra)
    rec.update(
        wall_s=round(wall, 3),
        user_s=round(after.ru_utime - before.ru_utime, 3),
        sys_s=round(after.ru_stime - before.ru_stime, 3),
        server_cpu_s=round(max(0.0, s1 - s0), 3),
        # ru_maxrss of RUSAGE_CHILDREN: the largest single descendant, KiB
        maxrss_mb=round(after.ru_maxrss * 1024 / MB, 1),
        rc=rc,
    )
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    sys.exit(rc)


def _num(v):
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


# ---------------------------------------------------------------- fio, codecs
def cmd_fio(argv):
    with open(argv[0]) as f:
        text = f.read()
    # fio may print notes before the JSON object
    doc = json.loads(text[text.index("{"):])
    rd = sum(j["read"]["bw_bytes"] for j in doc["jobs"]) / MB
    wr = sum(j["write"]["bw_bytes"] for j in doc["jobs"]) / MB
    print(f"{rd:.1f} {wr:.1f}")


# `lz4 -b` / `zstd -b` without a terminal: progress updates separated by carriage returns or
# newlines, each level closed by "N#"; the last complete update before it holds the result.
CODEC_RE = re.compile(
    r"(\d+)\s*->\s*(\d+)\s*\(x?([\d.]+)\),\s*([\d.]+)\s*MB/s\s*,\s*([\d.]+)\s*MB/s"
)
LEVEL_RE = re.compile(r"(-?\d+)#")


def cmd_codec(argv):
    with open(argv[0], errors="replace") as f:
        text = f.read()
    last, current = {}, None
    for piece in re.split(r"[\r\n]+", text):
        found = CODEC_RE.findall(piece)
        if found:
            current = found[-1]
        lv = LEVEL_RE.match(piece.strip())
        if lv and current:
            _i, _o, ratio, c, d = current
            level = int(lv.group(1))
            last[level] = dict(level=level, ratio=float(ratio), compress_mb_s=float(c), decompress_mb_s=float(d))
            current = None
    for v in last.values():
        print(json.dumps(v))


# ---------------------------------------------------------------- report
def med(xs):
    return statistics.median(xs) if xs else None


def spread(xs, nd=0):
    if not xs:
        return ""
    if len(xs) == 1:
        return f"{xs[0]:,.{nd}f}"
    return f"{med(xs):,.{nd}f} ({min(xs):,.{nd}f}–{max(xs):,.{nd}f})"


def fmt(x, nd=0):
    return "–" if x is None else f"{x:,.{nd}f}"


TOOLS = ["recman", "pgbackrest", "pg_basebackup"]
# the order of tools in the table; "local": PostgreSQL restoring WAL with cp from a directory
TOOL_ORDER = TOOLS + ["local"]
# operations whose MB/s is of a small amount of work (incremental) or of WAL: wall time shown too
TIMED_OPS = ("incremental", "archive_push", "archive_get", "replay")


def cmd_report(argv):
    opts = dict(zip(argv[::2], argv[1::2]))
    runs = [json.loads(line) for line in open(opts["--runs"]) if line.strip()]
    limits = json.load(open(opts["--limits"]))
    meta = json.load(open(opts["--meta"]))
    cores = meta["cores"]

    groups = {}
    for r in runs:
        key = (r["dataset"], r["op"], r["comp"], r["tool"])
        groups.setdefault(key, []).append(r)

    rows = []
    for (ds, op, comp, tool), rs in groups.items():
        ok = [r for r in rs if r["rc"] == 0]
        db = meta["datasets"][ds]["db_bytes"]
        basis = [r.get("basis_bytes", db) for r in ok]
        rates = [b / r["wall_s"] / MB for b, r in zip(basis, ok) if r["wall_s"] > 0]
        cpu = [(r["user_s"] + r["sys_s"] + r["server_cpu_s"]) / (b / 1e9) for b, r in zip(basis, ok)]
        tool_cpu = [(r["user_s"] + r["sys_s"]) / (b / 1e9) for b, r in zip(basis, ok)]
        repo = [r["repo_bytes"] / MB for r in ok if r.get("repo_bytes")]
        row = dict(
            dataset=ds, op=op, comp=comp, tool=tool, runs=len(rs), failed=len(rs) - len(ok),
            mb_s=med(rates), mb_s_min=min(rates) if rates else None,
            mb_s_max=max(rates) if rates else None, mb_s_all=[round(x, 1) for x in rates],
            wall_s=med([r["wall_s"] for r in ok]),
            cpu_s_per_gb=med(cpu), tool_cpu_s_per_gb=med(tool_cpu),
            peak_rss_mb=max((r["maxrss_mb"] for r in ok), default=None),
            repo_mb=med(repo),
            notes=sorted({r["note"] for r in ok if r.get("note")}),
        )
        for k in ("recman_total_mb_s", "recman_sustained_mb_s", "budget_mib"):
            vals = [r[k] for r in ok if isinstance(r.get(k), (int, float))]
            if vals:
                row[k] = med(vals)
        rows.append(row)

    def find(ds, op, comp, tool):
        for r in rows:
            if (r["dataset"], r["op"], r["comp"], r["tool"]) == (ds, op, comp, tool):
                return r
        return None

    def ratio(a, b):
        if a is None or b is None or not b:
            return None
        return a / b

    # physical limit of each (dataset, op, comp), in MB/s of database bytes
    def limit_for(ds, op, comp, checked=False):
        rd = limits.get("read_direct_1m_qd16")
        # reading the cluster's own files (backup, validate database): fio on every file of its
        # base/ in every round (older runs: its largest file), when measured
        # (and, where measured, the same read through the page cache: the better of the two)
        own = limits.get("read_direct_db_1m_qd16") or limits.get("read_direct_own_1m_qd16") or rd
        buffered_db = limits.get("read_buffered_db_1m_qd16")
        own_what = ("fio read of the cluster's base/, file after file" if limits.get("read_direct_db_1m_qd16")
                    else "fio read of the cluster's largest file")
        if buffered_db and own and buffered_db > own:
            own, own_what = buffered_db, "fio read of the cluster's base/, file after file, buffered (faster than direct here)"
        copy = limits.get("copy_direct_1m_qd16")
        cf = meta["datasets"][ds].get("codec_file")
        codec = limits.get("codecs", {}).get(cf, {})
        ck = limits.get("checksum", {}).get(cf, {}).get("mb_per_s")
        if op == "backup":
            if comp == "none":
                return copy, "fio copy (direct, 1 MiB, qd16)"
            c = codec.get(comp)
            if not c or not ck:
                return None, ""
            per_core = 1 / (1 / c["compress_mb_s"] + 1 / ck)
            cpu = per_core * cores
            io = min(x for x in (own, copy * c["ratio"] if copy else None) if x)
            if cpu < io:
                return cpu, f"CPU: {cores} × (checksum + {comp} compress) = {cpu:,.0f}"
            return io, f"disk read ({own_what})"
        if op in ("restore", "validate_backup"):
            c = codec.get(comp)
            if comp == "none" or not c:
                return (copy if op == "restore" else rd), "disk"
            cpu = c["decompress_mb_s"] * cores
            if op == "validate_backup" and checked and ck:
                # validation also checks every page: decompress + page checksum per core
                cpu = cores / (1 / c["decompress_mb_s"] + 1 / ck)
            io = copy * c["ratio"] if op == "restore" and copy else rd * c["ratio"]
            if op == "restore":
                # the best write fio found of the cluster's size in each round (direct or
                # buffered, depth 1 or 16, fsync at the end; the median of the rounds), else, in
                # older runs, the best of the short fio writes
                disk = limits.get("disk", {})
                writes = [disk.get(f"write_{w}_1m_qd{d}") for w in ("direct", "buffered") for d in (1, 16)]
                best = limits.get("write_db_best_1m") or max((w for w in writes if w), default=io)
                io = min(io, best)
            what = f"{comp} decompress + page checksum" if op == "validate_backup" and checked else f"{comp} decompress"
            return (cpu, f"CPU: {cores} × {what}") if cpu < io else (io, "disk")
        if op == "validate_database":
            return own, f"{own_what} (1 MiB, qd16)"
        return None, ""

    for r in rows:
        lim, why = limit_for(r["dataset"], r["op"], r["comp"])
        r["limit_mb_s"] = lim
        r["limit_basis"] = why
        r["vs_limit"] = ratio(r["mb_s"], lim)
        if r["tool"] == "recman":
            peer_op = {"validate_backup": "verify", "validate_database": None}.get(r["op"], r["op"])
            for p in TOOLS[1:]:
                pr = find(r["dataset"], peer_op, r["comp"], p) if peer_op else None
                if pr and pr["mb_s"]:
                    r[f"vs_{p}"] = ratio(r["mb_s"], pr["mb_s"])
                    r[f"cpu_vs_{p}"] = ratio(r["cpu_s_per_gb"], pr["cpu_s_per_gb"])

    order_op = {"backup": 0, "backup_cached": 1, "restore": 2, "validate_backup": 3, "verify": 4,
                "validate_database": 5, "incremental": 6, "archive_push": 7, "archive_get": 8, "replay": 9}
    order_comp = {"none": 0, "lz4": 1, "zstd:1": 2, "zstd:3": 3}
    rows.sort(key=lambda r: (r["dataset"] != "pgbench", r["dataset"], order_op.get(r["op"], 9),
                             order_comp.get(r["comp"], 9) if r["op"] != "replay" else 0,
                             TOOL_ORDER.index(r["tool"]) if r["tool"] in TOOL_ORDER else 9))

    # targets of issue 4
    targets = []

    def target(name, value, goal, evidence=""):
        met = None if value is None else value >= goal
        targets.append(dict(target=name, value=value, goal=goal, met=met, evidence=evidence))

    def target_le(name, value, goal, evidence=""):
        met = None if value is None else value <= goal
        targets.append(dict(target=name, value=value, goal=goal, met=met, evidence=evidence, le=True))

    def g(ds, op, comp, tool, key):
        r = find(ds, op, comp, tool)
        return r.get(key) if r else None

    ds = "pgbench"
    target("backup lz4 / pgBackRest (process-max = channels)", g(ds, "backup", "lz4", "recman", "vs_pgbackrest"), 2.0)
    target("backup lz4 / pg_basebackup server-lz4", g(ds, "backup", "lz4", "recman", "vs_pg_basebackup"), 1.3)
    for lv in ("zstd:1", "zstd:3"):
        target(f"backup {lv} / pgBackRest", g(ds, "backup", lv, "recman", "vs_pgbackrest"), 1.5)
        target(f"backup {lv} / pg_basebackup server-{lv}", g(ds, "backup", lv, "recman", "vs_pg_basebackup"), 1.3)
    for lv in ("lz4", "zstd:1"):
        target(f"backup {lv} / limit (disk read, or CPU when lower)", g(ds, "backup", lv, "recman", "vs_limit"), 0.9)
    target("backup none / copy limit", g(ds, "backup", "none", "recman", "vs_limit"), 0.9)
    target("backup lz4, database in the page cache / pg_basebackup server-lz4",
           g(ds, "backup_cached", "lz4", "recman", "vs_pg_basebackup"), 1.0)
    target("backup none / pg_basebackup", g(ds, "backup", "none", "recman", "vs_pg_basebackup"), 1.3)
    target("restore lz4 / pgBackRest restore", g(ds, "restore", "lz4", "recman", "vs_pgbackrest"), 2.0)
    target("validate database / read limit", g(ds, "validate_database", "none", "recman", "vs_limit"), 0.9)
    target("validate backup lz4 / min(read, decompress) limit", g(ds, "validate_backup", "lz4", "recman", "vs_limit"), 0.9)
    vb = g(ds, "validate_backup", "lz4", "recman", "mb_s")
    vb_lim, _ = limit_for(ds, "validate_backup", "lz4", checked=True)
    target("validate backup lz4 / min(read, decompress + page checksum) limit",
           vb / vb_lim if vb and vb_lim else None, 0.9)
    for lv in ("none", "lz4", "zstd:1", "zstd:3"):
        target_le(f"CPU s/GB backup {lv} / pgBackRest", g(ds, "backup", lv, "recman", "cpu_vs_pgbackrest"), 0.5)
    if "random" in meta["datasets"]:
        target("random data: backup lz4 / pgBackRest", g("random", "backup", "lz4", "recman", "vs_pgbackrest"), 2.0)
        target("random data: backup lz4 / pg_basebackup", g("random", "backup", "lz4", "recman", "vs_pg_basebackup"), 1.3)

    def secs(ds, op, comp, tool):
        w = g(ds, op, comp, tool, "wall_s")
        return None if w is None else f"{w:,.2f} s"

    def vs_time(ds, op, comp, peer, peer_comp=None):
        a, b = secs(ds, op, comp, "recman"), secs(ds, op, peer_comp or comp, peer)
        return f"{a or '–'} vs {b or '–'}"

    ds = "pgbench"
    if find(ds, "incremental", "lz4", "recman") or find(ds, "incremental", "lz4", "pgbackrest"):
        target("incremental level 1 / pgBackRest incr: speed", g(ds, "incremental", "lz4", "recman", "vs_pgbackrest"), 3.0,
               vs_time(ds, "incremental", "lz4", "pgbackrest"))
        ra, rb = g(ds, "incremental", "lz4", "recman", "repo_mb"), g(ds, "incremental", "lz4", "pgbackrest", "repo_mb")
        target_le("incremental level 1 / pgBackRest incr: size", ratio(ra, rb), 0.2,
                  f"{fmt(ra, 1)} vs {fmt(rb, 1)} MB")
    ds = "wal"
    if ds in meta["datasets"]:
        target("archive-push / pgBackRest async", g(ds, "archive_push", "lz4", "recman", "vs_pgbackrest"), 2.0,
               vs_time(ds, "archive_push", "lz4", "pgbackrest"))
        target("archive-get / pgBackRest async", g(ds, "archive_get", "lz4", "recman", "vs_pgbackrest"), 2.0,
               vs_time(ds, "archive_get", "lz4", "pgbackrest"))
        target_le("replay via recman / replay from local dir (time)",
                  ratio(g(ds, "replay", "lz4", "recman", "wall_s"), g(ds, "replay", "none", "local", "wall_s")), 1.1,
                  vs_time(ds, "replay", "lz4", "local", "none")
                  + (f"; pgBackRest {secs(ds, 'replay', 'lz4', 'pgbackrest')}"
                     if secs(ds, "replay", "lz4", "pgbackrest") else ""))
    if "small" in meta["datasets"]:
        big, small = g("pgbench", "backup", "lz4", "recman", "peak_rss_mb"), g("small", "backup", "lz4", "recman", "peak_rss_mb")
        target_le("peak RSS recman backup lz4: main scale / small scale", ratio(big, small), 1.2,
                  f"{fmt(big)} vs {fmt(small)} MB at {meta['datasets']['pgbench']['db_bytes'] / MB:,.0f} vs "
                  f"{meta['datasets']['small']['db_bytes'] / MB:,.0f} MB of data")

    result = dict(meta=meta, limits=limits, rows=rows, targets=targets)
    with open(opts["--json"], "w") as f:
        json.dump(result, f, indent=1)

    md = []
    md.append(f"Units: MB/s = 10^6 bytes/s of database bytes (data directory without pg_wal); median (min–max) of the runs; "
              f"CPU s/GB = user+sys of the tool and its children plus the PostgreSQL server's CPU, per 10^9 database bytes."
              + (f" Data set wal: MB/s and CPU s/GB of WAL bytes ({meta['datasets']['wal'].get('segments')} segments × 16 MiB);"
                 f" replay = from start of a base copy to the end of recovery."
                 if "wal" in meta["datasets"] else "")
              + (" Incremental, WAL: median wall time after the MB/s." if any(r["op"] in TIMED_OPS for r in rows) else ""))
    md.append("")
    md.append("### Physical limits (same run)")
    md.append("")
    md.append("| measurement | MB/s |")
    md.append("|---|---|")
    for k, v in limits.get("disk", {}).items():
        md.append(f"| {k} | {fmt(v)} |")
    for key, what in (("own", "the cluster's largest file"), ("db", "every file of the cluster's base/, one after another")):
        if limits.get(f"read_direct_{key}_runs"):
            runs = ", ".join(fmt(x) for x in limits[f"read_direct_{key}_runs"])
            md.append(f"| read_direct_{key}_1m_qd16 ({what}, each round: {runs}) | {fmt(limits[f'read_direct_{key}_1m_qd16'])} |")
    if limits.get("write_db_runs"):
        runs = ", ".join(fmt(x) for x in limits["write_db_runs"])
        md.append(f"| write_db_best_1m (the cluster's size written where the restores write, the best of direct and buffered at depth 1 and 16 with an fsync at the end, each round: {runs}; the restore's limit) | {fmt(limits['write_db_best_1m'])} |")
    md.append("")
    md.append("| data file | codec | ratio | compress MB/s (1 core) | decompress MB/s (1 core) |")
    md.append("|---|---|---|---|---|")
    for fname, cs in limits.get("codecs", {}).items():
        for codec, c in cs.items():
            md.append(f"| {fname} | {codec} | {c['ratio']:.2f} | {fmt(c['compress_mb_s'])} | {fmt(c['decompress_mb_s'])} |")
    for fname, c in limits.get("checksum", {}).items():
        md.append(f"| {fname} | page checksum | – | {fmt(c['mb_per_s'])} (mismatches {c['mismatches']}) | – |")
    md.append("")
    md.append("### Tools")
    md.append("")
    md.append("| data | operation | compression | tool | runs | MB/s | CPU s/GB | peak RSS MB | repo MB | recman/pgBackRest | recman/pg_basebackup | limit MB/s | ÷ limit |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = "FAILED" if r["mb_s"] is None else spread(r["mb_s_all"])
        if r["op"] in TIMED_OPS and r["wall_s"] is not None:
            rate += f"; {r['wall_s']:,.2f} s"
        # an incremental's few MB: one decimal
        small_repo = r["op"] in TIMED_OPS and r["repo_mb"] is not None and r["repo_mb"] < 10
        runs_s = f"{r['runs']}" + (f" ({r['failed']} failed)" if r["failed"] else "")
        md.append(
            f"| {r['dataset']} | {r['op']} | {r['comp']} | {r['tool']} | {runs_s} | {rate} | {fmt(r['cpu_s_per_gb'], 2)} | "
            f"{fmt(r['peak_rss_mb'])} | {fmt(r['repo_mb'], 1 if small_repo else 0)} | {fmt(r.get('vs_pgbackrest'), 2)} | "
            f"{fmt(r.get('vs_pg_basebackup'), 2)} | {fmt(r['limit_mb_s'])} | {fmt(r['vs_limit'], 2)} |"
        )
    md.append("")
    md.append("### Targets (issue 4)")
    md.append("")
    md.append("| target | measured | goal | met |")
    md.append("|---|---|---|---|")
    for t in targets:
        op = "≤" if t.get("le") else "≥"
        met = "–" if t["met"] is None else ("yes" if t["met"] else "**no**")
        ev = f" ({t['evidence']})" if t.get("evidence") else ""
        md.append(f"| {t['target']} | {fmt(t['value'], 2)}{ev} | {op} {t['goal']} | {met} |")
    notes = [(r["op"], r["comp"], n) for r in rows if r["tool"] == "recman" for n in r["notes"]]
    if notes:
        md.append("")
        md.append("recman's own figures (`report io` diagnosis, total/sustained MB/s, memory budget):")
        md.append("")
        for r in rows:
            if r["tool"] != "recman":
                continue
            bits = []
            if "recman_total_mb_s" in r:
                bits.append(f"total {r['recman_total_mb_s']:.0f} MB/s, sustained {r.get('recman_sustained_mb_s', 0):.0f} MB/s")
            if "budget_mib" in r:
                bits.append(f"memory budget {r['budget_mib']:.0f} MiB")
            bits += r["notes"]
            if bits:
                md.append(f"- {r['dataset']} {r['op']} {r['comp']}: " + "; ".join(bits))
    text = "\n".join(md) + "\n"
    with open(opts["--md"], "w") as f:
        f.write(text)
    print(text)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, argv = sys.argv[1], sys.argv[2:]
    {"measure": cmd_measure, "fio": cmd_fio, "codec": cmd_codec, "report": cmd_report}.get(
        cmd, lambda _a: sys.exit(__doc__))(argv)


if __name__ == "__main__":
    main()
