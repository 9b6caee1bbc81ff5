#!/usr/bin/env python3
"""Import circles between the files of each crate: the guard of ARCHITECTURE.md's rule that
modules import downward only.

A file imports another when it names a path that resolves into it: `use crate::a::b::X`,
`super::X`, `self::child::X`, a child module's `child::f()`, or a `crate::a::f()` written in
the code. A path resolves to the deepest module file it reaches, so an item re-exported by a
parent counts as an import of the parent: that is the file a reader opens. Test modules
(from `#[cfg(test)]` on) and the crates' tests/, benches and examples are left out: tests may
reach anywhere.

Prints every circle (the files, and the names that tie each step) and exits 1 if there is one,
so CI keeps the count at zero. It also holds the engine to ARCHITECTURE.md's table of its
layers: every top-level file or folder of the engine stands in one row, and no arrow runs from
a row to a later one. Run from the workspace root:

    python3 scripts/import_circles.py [crates/NAME ...]
"""
import os
import re
import sys

USE = re.compile(r"\buse\s+((?:crate|super|self|[a-z_][a-z0-9_]*)\b[^;]*);", re.S)
INLINE = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def modules(src_dir):
    """Module path (tuple) -> file, for every .rs file under src_dir."""
    out = {}
    for root, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            else:
                key = tuple(rel)
            # A folder's module file may sit beside it (a.rs) or inside it (a/a.rs, by #[path]).
            if len(key) >= 2 and key[-1] == key[-2] and key[:-1] not in out:
                key = key[:-1]
            out.setdefault(key, path)
    return out


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def without_tests(mods):
    """Leaves out the modules declared under `#[cfg(test)]` (tests kept in files of their own)."""
    tests = set()
    for key, path in mods.items():
        for name in TEST_MOD.findall(open(path, encoding="utf-8").read()):
            tests.add(key + (name,))
    return {k: p for k, p in mods.items() if not any(k[: len(t)] == t for t in tests)}


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [re.sub(r"\bas\w+$", "", tree)] if tree else []
    head, body = tree[:i], tree[i + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand(head + part)]


def resolve(segs, here, mods, children):
    """The module path a `::`-path names from module `here`, or None outside the crate."""
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = here
        rest = list(segs)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    elif segs[0] in children:
        base, rest = here, segs
    else:
        return None
    best = base
    for n in range(1, len(rest) + 1):
        if base + tuple(rest[:n]) in mods:
            best = base + tuple(rest[:n])
    return best


def edges_of(key, path, mods):
    text = open(path, encoding="utf-8").read()
    cut = re.search(r"^\s*#\[cfg\(test\)\]", text, re.M)
    if cut:
        text = text[: cut.start()]
    text = STRING.sub('""', COMMENT.sub("", text))
    children = {m for m in MOD.findall(text)}
    found = {}

    def add(segs, name):
        target = resolve(segs, key, mods, children)
        if target is not None and target != key and target in mods:
            found.setdefault(mods[target], set()).add(name)

    for m in USE.finditer(text):
        for p in expand(m.group(1)):
            segs = [s for s in p.split("::") if s]
            add(segs, segs[-1] if segs else "")
    for m in INLINE.finditer(text):
        segs = [m.group(1)] + [s for s in m.group(2).split("::") if s]
        add(segs, segs[-1])
    for child in children:
        for m in re.finditer(r"\b" + child + r"((?:::\w+)+)", text):
            segs = [child] + [s for s in m.group(1).split("::") if s]
            add(segs, segs[-1])
    return found


def circles(graph):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = n[0]
        n[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = n[0]
                n[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(graph.get(w, {}))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def rooms(graph, mods):
    """The graph at each folder of the crate: its rooms are the folder's own files and its
    sub-folders, each sub-folder standing as one room together with its module file (a.rs
    beside a/, or a/mod.rs). An arrow counts at the deepest folder that holds both ends; an
    arrow into the folder's own module file is an arrow to its face, as into the crate root."""
    key_of = {path: key for key, path in mods.items()}
    levels = {}
    for src, targets in graph.items():
        a = key_of[src]
        for dst, names in targets.items():
            b = key_of[dst]
            # The folder holding both: the longest common prefix that is a proper prefix of both.
            common = 0
            while common < len(a) and common < len(b) and a[common] == b[common]:
                common += 1
            folder = a[: min(common, len(a) - 1, len(b) - 1)] if common else ()
            if len(b) == len(folder) or len(a) == len(folder):
                continue  # one end is the folder's own module file: its face
            ra, rb = folder + (a[len(folder)],), folder + (b[len(folder)],)
            if ra == rb:
                continue
            level = levels.setdefault(folder, {})
            level.setdefault(ra, {}).setdefault(rb, set()).update(names)
    return levels


def engine_layers(doc="ARCHITECTURE.md", crate="crates/recman-engine"):
    """Faults against the layer table of ARCHITECTURE.md ("## The engine's layers")."""
    text = open(doc, encoding="utf-8").read()
    part = text.split("## The engine's layers", 1)[1].split("\n## ", 1)[0]
    rows = [l for l in part.splitlines() if l.startswith("| ") and "`" in l]
    row_of = {}
    for i, line in enumerate(rows):
        for name in re.findall(r"`([a-z_]+)(?:\.rs|/)`", line.split("|")[2]):
            row_of[name] = i
    mods = without_tests(modules(os.path.join(crate, "src")))
    graph = {path: edges_of(key, path, mods) if key else {} for key, path in mods.items()}
    key_of = {path: key for key, path in mods.items()}
    faults = sorted(
        f"{k[0]} is in no row of the layer table"
        for k in {k[:1] for k in mods if k} if k[0] not in row_of
    )
    for src, targets in graph.items():
        a = key_of[src]
        for dst, names in targets.items():
            b = key_of[dst]
            if a and b and a[0] != b[0] and row_of.get(b[0], -1) > row_of.get(a[0], 99):
                faults.append(
                    f"{src} -> {dst} ({', '.join(sorted(names))}) runs from a lower layer to a higher one"
                )
    return faults


def main():
    crates = sys.argv[1:] or sorted(
        os.path.join("crates", c)
        for c in os.listdir("crates")
        if os.path.isdir(os.path.join("crates", c, "src"))
    )
    total = 0
    for crate in crates:
        mods = without_tests(modules(os.path.join(crate, "src")))
        # The crate root is the crate's face: its `mod` lines and re-exports name everything,
        # so only the arrows into it (to what it defines itself) are drawn.
        graph = {path: edges_of(key, path, mods) if key else {} for key, path in mods.items()}
        for folder, level in sorted(rooms(graph, mods).items()):
            for comp in circles(level):
                total += 1
                where = "/".join(folder) or "src"
                print(f"circle in {crate} ({where}): {', '.join('/'.join(r) for r in comp)}")
                members = set(comp)
                for r in comp:
                    for t, names in sorted(level.get(r, {}).items()):
                        if t in members:
                            print(f"  {'/'.join(r)} -> {'/'.join(t)}: {', '.join(sorted(names))}")
    if not sys.argv[1:]:
        for fault in engine_layers():
            total += 1
            print(f"layers: {fault}")
    if total:
        print(
            f"{total} import circle(s) or layer fault(s); hint: move what both sides use into a module below "
            "them (ARCHITECTURE.md, \"Keeping the layers\")"
        )
        return 1
    layers = "" if sys.argv[1:] else ", and the engine keeps its layers"
    print(f"no import circle in {len(crates)} crate(s){layers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
