#!/usr/bin/env bash
# Reproduces the seeds' tape findings on the virtual tape library's model: throughput vs
# drives under an input limit, BLKSIZE, hardware compression, streaming and shoe-shining.
# Needs no tape, no PostgreSQL and no root; writes bench/results/vtape.json. Not a test: it
# prints a table (docs/vtape.md explains it).
#
#   bench/vtape.sh [--quick]      (--quick: under a minute; the full run takes a few)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) ARGS+=(--quick); shift ;;
        *) echo "unknown option $1; usage: $0 [--quick]" >&2; exit 2 ;;
    esac
done
cd "$ROOT"
cargo run --release -p recman-media --example vtape_bench -- "${ARGS[@]}" --out "$ROOT/bench/results/vtape.json"
