#!/usr/bin/env bash
# Runs the proxy benchmark with its references: socat, haproxy and splice_floor.c (pass-through), and the
# kernel's tbf/netem in a network namespace (needs root), and the proxy CPU per delayed message against the last
# polling build (built once under <target>/spin-baseline/). Prints markdown tables. ~3 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v socat >/dev/null || ! command -v haproxy >/dev/null || ! command -v tc >/dev/null; then
    apt-get update -qq && apt-get install -y -qq socat haproxy iproute2
fi
cargo bench --bench proxy -- "$@"
