#!/usr/bin/env python3
"""Imitations of PostgreSQL's archiver and of recovery's restore_command calls, for
bench/wal-phase.sh (stdlib only). Each command is a shell command string with %p and %f, run
by /bin/sh with cwd = the fake data directory, as PostgreSQL runs archive_command and
restore_command.

  walsim.py push --pgdata DIR --cmd 'TOOL ... %p'
      The archiver: for each pg_wal/archive_status/<seg>.ready in name order, runs the command
      with %p = pg_wal/<seg>, %f = <seg>; renames .ready to .done after each success. A failure
      stops it (rc 1); PostgreSQL would retry, here the run counts as failed.
  walsim.py get --pgdata DIR --list NAMES.txt --cmd 'TOOL ... %f %p' [--check-dir SRC]
      Recovery: for each name in NAMES.txt in order, runs the command with %f = the name and
      %p = pg_wal/RECOVERYXLOG, checks that the file arrived (16 MiB, its first page header
      names that segment; with --check-dir also equal to SRC/<name>) and removes it, as the
      startup process does after replaying it.
  walsim.py replay --pgdata DIR --bin PGBIN --log FILE [--timeout S]
      Starts a server set up for archive recovery (pg_ctl start without waiting) and returns
      when recovery has ended: postmaster.pid says "ready" (after the end-of-recovery
      checkpoint; the server needs hot_standby = off, since a hot standby says "ready" as soon
      as it takes read-only connections). Prints the postmaster tree's CPU
      seconds at that moment (startup process, its restore_command children, checkpointer):
      "server_cpu_s N".
  walsim.py fake --pgdata DIR --control PG_CONTROL --segs SRC --list NAMES.txt
      Builds the fake data directory: global/pg_control (a copy), pg_wal/<seg> hard links to
      SRC/<seg> (copies where links fail), pg_wal/archive_status/<seg>.ready.
"""
import os
import shutil
import subprocess
import sys
import time

SEG = 16 << 20


def opts(argv):
    out = {}
    i = 0
    while i < len(argv):
        if not argv[i].startswith("--"):
            sys.exit(f"walsim: unexpected {argv[i]}")
        out[argv[i][2:]] = argv[i + 1]
        i += 2
    return out


def subst(cmd, p, f):
    return cmd.replace("%p", p).replace("%f", f)


def header_ok(path, name):
    """The long page header at the start of a segment holds its timeline and address."""
    with open(path, "rb") as f:
        h = f.read(16)
    tli = int.from_bytes(h[4:8], "little")
    addr = int.from_bytes(h[8:16], "little")
    segno = int(name[8:16], 16) * (0x100000000 // SEG) + int(name[16:24], 16)
    return tli == int(name[:8], 16) and addr == segno * SEG


def cmd_fake(o):
    d = o["pgdata"]
    names = [x.strip() for x in open(o["list"]) if x.strip()]
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(f"{d}/global")
    os.makedirs(f"{d}/pg_wal/archive_status")
    shutil.copy(o["control"], f"{d}/global/pg_control")
    for n in names:
        src, dst = f"{o['segs']}/{n}", f"{d}/pg_wal/{n}"
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy(src, dst)
        open(f"{d}/pg_wal/archive_status/{n}.ready", "w").close()


def cmd_push(o):
    d, cmd = o["pgdata"], o["cmd"]
    st = f"{d}/pg_wal/archive_status"
    ready = sorted(n[: -len(".ready")] for n in os.listdir(st) if n.endswith(".ready"))
    if not ready:
        sys.exit("walsim push: no .ready files")
    for seg in ready:
        # a batching tool may have archived it already and said so with .done
        if not os.path.exists(f"{st}/{seg}.ready"):
            continue
        rc = subprocess.call(subst(cmd, f"pg_wal/{seg}", seg), shell=True, cwd=d)
        if rc != 0:
            print(f"walsim push: archive command failed with rc {rc} for {seg}", file=sys.stderr)
            sys.exit(1)
        try:
            os.rename(f"{st}/{seg}.ready", f"{st}/{seg}.done")
        except FileNotFoundError:
            pass
    print(f"walsim push: {len(ready)} segments archived")


def cmd_get(o):
    d, cmd = o["pgdata"], o["cmd"]
    names = [x.strip() for x in open(o["list"]) if x.strip()]
    os.makedirs(f"{d}/pg_wal", exist_ok=True)
    dest = f"{d}/pg_wal/RECOVERYXLOG"
    for n in names:
        rc = subprocess.call(subst(cmd, "pg_wal/RECOVERYXLOG", n), shell=True, cwd=d)
        if rc != 0:
            print(f"walsim get: restore command failed with rc {rc} for {n}", file=sys.stderr)
            sys.exit(1)
        try:
            size = os.path.getsize(dest)
        except FileNotFoundError:
            print(f"walsim get: {n}: the command succeeded but wrote no {dest}", file=sys.stderr)
            sys.exit(1)
        if size != SEG:
            print(f"walsim get: {n}: {size} bytes, not {SEG}", file=sys.stderr)
            sys.exit(1)
        if not header_ok(dest, n):
            print(f"walsim get: {n}: the first page header does not name this segment", file=sys.stderr)
            sys.exit(1)
        if o.get("check-dir"):
            with open(dest, "rb") as a, open(f"{o['check-dir']}/{n}", "rb") as b:
                if a.read() != b.read():
                    print(f"walsim get: {n}: content differs from {o['check-dir']}/{n}", file=sys.stderr)
                    sys.exit(1)
        os.unlink(dest)
    print(f"walsim get: {len(names)} segments restored")


def cmd_replay(o):
    d = o["pgdata"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True
    from peers import server_cpu

    limit = float(o.get("timeout", 3600))
    rc = subprocess.call([f"{o['bin']}/pg_ctl", "-D", d, "-l", o["log"], "-W", "start"],
                         stdout=subprocess.DEVNULL)
    if rc != 0:
        sys.exit(f"walsim replay: pg_ctl start failed with rc {rc}")
    t0 = time.monotonic()
    pm, status = 0, ""
    while time.monotonic() - t0 < limit:
        try:
            with open(f"{d}/postmaster.pid") as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            lines = []
        if len(lines) > 7:
            pm, status = int(lines[0]), lines[7].strip()
            if status == "ready":
                print(f"server_cpu_s {server_cpu(pm):.3f}")
                return
        if pm and not os.path.exists(f"/proc/{pm}"):
            sys.exit("walsim replay: the server exited during recovery (see its log)")
        if not pm and time.monotonic() - t0 > 60:
            sys.exit("walsim replay: no postmaster.pid after 60 s (see the server log)")
        time.sleep(0.01)
    sys.exit(f"walsim replay: recovery did not end within {limit:.0f} s (status {status!r})")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("push", "get", "fake", "replay"):
        sys.exit(__doc__)
    o = opts(sys.argv[2:])
    {"push": cmd_push, "get": cmd_get, "fake": cmd_fake, "replay": cmd_replay}[sys.argv[1]](o)


if __name__ == "__main__":
    main()
