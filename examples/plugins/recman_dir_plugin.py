#!/usr/bin/env python3
"""An example recman media plugin: objects as files under a directory.

It speaks recman-media-plugin/1 (docs/plugin-protocol.md) on stdin/stdout, with the Python
standard library only, to show that a plugin needs no recman code. Usage:

    recman_dir_plugin.py --dir /srv/backups [--verbose]

Fault injection, for recman's tests (environment variables):
    RECMAN_PLUGIN_TRANSIENT_RATE=0.3  answer this fraction of open_read/read/info/list
                                      requests with a transient error
    RECMAN_PLUGIN_SEED=42             seed of that choice (default 0), for repeatable runs
    RECMAN_PLUGIN_PERMANENT=1         fail every request after hello with "media offline"
    RECMAN_PLUGIN_CORRUPT_READS=1     flip a byte of every read payload after checksumming it
"""

import argparse
import errno
import json
import os
import random
import re
import stat
import struct
import sys

PROTOCOL = "recman-media-plugin/1"
NAME = "recman-dir-plugin"
VERSION = "1.0.0"
MAX_FRAME = 4 << 20
MAX_HEADER = 16 << 20
LIST_PAGE = 1000
# Unfinished writes live next to their final name, so the rename on commit stays within
# one directory (atomic); listings hide them.
TMP_RE = re.compile(r"\.recman-tmp-\d+-\d+$")

# CRC-32C (Castagnoli), reflected polynomial, one table: slow but dependency-free.
POLY = 0x82F63B78
TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ POLY if _c & 1 else _c >> 1
    TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    table = TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _gf2_times(mat, vec):
    total, i = 0, 0
    while vec:
        if vec & 1:
            total ^= mat[i]
        vec >>= 1
        i += 1
    return total


def _gf2_square(mat):
    return [_gf2_times(mat, mat[n]) for n in range(32)]


def crc32c_combine(crc1, crc2, len2):
    """The CRC of A+B from crc(A), crc(B) and len(B) (zlib's method), so the whole-object
    checksum costs nothing beyond the per-chunk checks."""
    if len2 == 0:
        return crc1
    odd = [POLY] + [1 << n for n in range(31)]  # one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


class PluginError(Exception):
    def __init__(self, cls, message):
        super().__init__(message)
        self.cls = cls
        self.message = message


def os_error(e):
    if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
        return PluginError("not_found", "no such object")
    if e.errno in (errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT):
        return PluginError("transient", (e.strerror or str(e)).lower())
    return PluginError("permanent", (e.strerror or str(e)).lower())


def check_name(name):
    parts = name.split("/") if isinstance(name, str) else [""]
    if not name or name.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise PluginError("permanent", f"invalid object name {name!r}")
    return name


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def makedirs_durable(path):
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except FileExistsError:
            continue  # another writer made it and fsynced its parent
        fsync_dir(os.path.dirname(d))


class Store:
    def __init__(self, root, env, verbose):
        self.root = os.path.abspath(root)
        self.verbose = verbose
        self.max_frame = MAX_FRAME
        self.handles = {}
        self.next_handle = 1
        self.tmp_seq = 0
        self.rate = float(env.get("RECMAN_PLUGIN_TRANSIENT_RATE") or 0)
        self.rng = random.Random(int(env.get("RECMAN_PLUGIN_SEED") or 0))
        self.offline = env.get("RECMAN_PLUGIN_PERMANENT") == "1"
        self.corrupt = env.get("RECMAN_PLUGIN_CORRUPT_READS") == "1"

    def path(self, name):
        return os.path.join(self.root, check_name(name))

    def new_handle(self, state):
        h = self.next_handle
        self.next_handle += 1
        self.handles[h] = state
        return h

    def handle(self, req, kind):
        state = self.handles.get(req.get("handle"))
        if state is None or state["kind"] != kind:
            raise PluginError("permanent", f"unknown handle {req.get('handle')!r}")
        return state

    def dispatch(self, op, req, payload):
        if op != "hello" and self.offline:
            raise PluginError("permanent", "media offline")
        if op in ("open_read", "read", "info", "list") and self.rate > 0:
            if self.rng.random() < self.rate:
                raise PluginError("transient", "simulated transient fault (RECMAN_PLUGIN_TRANSIENT_RATE)")
        fn = getattr(self, "op_" + op, None) if isinstance(op, str) else None
        if fn is None:
            raise PluginError("permanent", f"unknown request {op!r}")
        try:
            return fn(req, payload)
        except OSError as e:
            raise os_error(e) from e

    def op_hello(self, req, _payload):
        asked = req.get("protocol")
        if asked != PROTOCOL:
            raise PluginError("permanent", f"unsupported protocol {asked!r}, this plugin speaks {PROTOCOL!r}")
        limit = req.get("max_frame")
        if isinstance(limit, int) and limit > 0:
            self.max_frame = min(self.max_frame, limit)
        caps = {"ranged_read": True, "list": True, "atomic_commit": True, "block_size": 0}
        reply = {"protocol": PROTOCOL, "name": NAME, "version": VERSION, "max_frame": self.max_frame}
        return {**reply, "capabilities": caps}, b""

    def op_open_write(self, req, _payload):
        path = self.path(req.get("name"))
        makedirs_durable(os.path.dirname(path))
        self.tmp_seq += 1
        tmp = f"{path}.recman-tmp-{os.getpid()}-{self.tmp_seq}"
        f = open(tmp, "wb")
        h = self.new_handle({"kind": "w", "path": path, "tmp": tmp, "file": f, "size": 0, "crc": 0})
        return {"handle": h}, b""

    def op_write(self, req, payload):
        w = self.handle(req, "w")
        got = crc32c(payload)
        if got != req.get("crc32c"):
            sent = req.get("crc32c")
            raise PluginError("transient", f"checksum mismatch in write: header says {sent!r}, payload has {got}")
        w["file"].write(payload)
        w["crc"] = crc32c_combine(w["crc"], got, len(payload))
        w["size"] += len(payload)
        return {}, b""

    def discard(self, w):
        w["file"].close()
        try:
            os.unlink(w["tmp"])
        except FileNotFoundError:
            pass

    def op_commit(self, req, _payload):
        w = self.handle(req, "w")
        del self.handles[req["handle"]]
        if req.get("size") != w["size"] or req.get("crc32c") != w["crc"]:
            self.discard(w)
            raise PluginError(
                "permanent",
                f"commit refused: recman sent {req.get('size')} bytes with crc32c {req.get('crc32c')}, "
                f"the plugin received {w['size']} bytes with crc32c {w['crc']}",
            )
        try:
            w["file"].flush()
            os.fsync(w["file"].fileno())
            w["file"].close()
            os.replace(w["tmp"], w["path"])
        except OSError:
            self.discard(w)
            raise
        fsync_dir(os.path.dirname(w["path"]))
        return {"size": w["size"]}, b""

    def op_abort(self, req, _payload):
        w = self.handles.get(req.get("handle"))
        if w is not None and w["kind"] == "w":
            del self.handles[req["handle"]]
            self.discard(w)
        return {}, b""

    def op_open_read(self, req, _payload):
        f = open(self.path(req.get("name")), "rb")
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            f.close()
            raise PluginError("not_found", "no such object")
        h = self.new_handle({"kind": "r", "file": f})
        return {"handle": h, "size": st.st_size}, b""

    def op_read(self, req, _payload):
        r = self.handle(req, "r")
        offset, length = req.get("offset"), req.get("length")
        if not (isinstance(offset, int) and isinstance(length, int)) or offset < 0 or length < 0:
            raise PluginError("permanent", "read needs a non-negative offset and length")
        if length > self.max_frame:
            raise PluginError("permanent", f"read length {length} is over max_frame {self.max_frame}")
        chunks = []
        while length > 0:
            data = os.pread(r["file"].fileno(), length, offset)
            if not data:
                break
            chunks.append(data)
            offset += len(data)
            length -= len(data)
        data = b"".join(chunks)
        crc = crc32c(data)
        if self.corrupt and data:
            data = bytearray(data)
            data[len(data) // 2] ^= 0x5A
            data = bytes(data)
        return {"crc32c": crc}, data

    def op_close(self, req, _payload):
        r = self.handles.get(req.get("handle"))
        if r is not None and r["kind"] == "r":
            del self.handles[req["handle"]]
            r["file"].close()
        return {}, b""

    def op_remove(self, req, _payload):
        path = self.path(req.get("name"))
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return {"removed": False}, b""
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return {"removed": False}, b""
        fsync_dir(os.path.dirname(path))
        return {"removed": True}, b""

    def op_info(self, req, _payload):
        try:
            st = os.stat(self.path(req.get("name")))
        except (FileNotFoundError, NotADirectoryError):
            return {"size": None}, b""
        return {"size": st.st_size if stat.S_ISREG(st.st_mode) else None}, b""

    def op_list(self, req, _payload):
        prefix = req.get("prefix") or ""
        after = req.get("start_after")
        # Walk only the directory the prefix points into.
        rel = prefix[: prefix.rfind("/")] if "/" in prefix else ""
        found = []
        stack = [rel]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(os.path.join(self.root, d)))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for e in entries:
                name = f"{d}/{e.name}" if d else e.name
                if e.is_dir(follow_symlinks=False):
                    if prefix.startswith(name + "/") or name.startswith(prefix):
                        stack.append(name)
                elif e.is_file(follow_symlinks=False) and name.startswith(prefix) and not TMP_RE.search(name):
                    if after is None or name > after:
                        found.append({"name": name, "size": e.stat(follow_symlinks=False).st_size})
        found.sort(key=lambda o: o["name"])
        return {"objects": found[:LIST_PAGE], "truncated": len(found) > LIST_PAGE}, b""

    def op_bye(self, _req, _payload):
        return {}, b""

    def close_all(self):
        for state in self.handles.values():
            if state["kind"] == "w":
                self.discard(state)
            else:
                state["file"].close()
        self.handles.clear()


def read_exact(f, n):
    data = f.read(n)
    if len(data) != n:
        raise EOFError
    return data


def read_frame(f, max_payload):
    (n,) = struct.unpack(">I", read_exact(f, 4))
    if n > MAX_HEADER:
        raise ValueError(f"header length {n} is too large")
    header = json.loads(read_exact(f, n).decode("utf-8"))
    (n,) = struct.unpack(">I", read_exact(f, 4))
    if n > max_payload:
        raise ValueError(f"payload of {n} bytes is over max_frame")
    return header, read_exact(f, n)


def write_frame(f, header, payload=b""):
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    f.write(struct.pack(">I", len(head)) + head + struct.pack(">I", len(payload)))
    f.write(payload)
    f.flush()


def main():
    ap = argparse.ArgumentParser(description="recman media plugin storing objects under a directory")
    ap.add_argument("--dir", required=True, help="the directory that holds the objects")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args()
    if not os.path.isdir(args.dir):
        print(f"recman_dir_plugin: {args.dir}: not a directory", file=sys.stderr)
        return 2
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    # stdout belongs to the protocol: a stray print must not corrupt a frame.
    sys.stdout = sys.stderr
    store = Store(args.dir, os.environ, args.verbose)
    try:
        while True:
            try:
                req, payload = read_frame(inp, store.max_frame)
            except EOFError:
                return 0
            except ValueError as e:
                print(f"recman_dir_plugin: malformed request: {e}", file=sys.stderr)
                return 1
            op = req.get("op") if isinstance(req, dict) else None
            if store.verbose:
                print(f"recman_dir_plugin: {op} {json.dumps(req)[:200]}", file=sys.stderr)
            try:
                header, data = store.dispatch(op, req if isinstance(req, dict) else {}, payload)
                write_frame(out, {"ok": True, **header}, data)
            except PluginError as e:
                write_frame(out, {"ok": False, "class": e.cls, "message": e.message})
            if op == "bye":
                return 0
    finally:
        store.close_all()


if __name__ == "__main__":
    sys.exit(main())
