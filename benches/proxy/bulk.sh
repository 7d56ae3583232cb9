#!/usr/bin/env bash
# Bulk pass-through throughput with every proxy in its own process, measured by iperf3 (one TCP
# stream, 127.0.0.1): direct, `fault run`, haproxy (splicing), socat, and splice_floor.c (the
# cheapest relay a process can be: what relaying costs on this machine whatever the proxy),
# interleaved over ROUNDS rounds of SECONDS seconds. Prints a markdown table: median MB/s, median share of direct per round, and the
# proxy's own CPU time per GB moved (user + system, children included, from /proc).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
for tool in iperf3 haproxy socat gcc; do
    command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq iperf3 haproxy socat gcc; break; }
done
cargo build --release --quiet
work=$(mktemp -d)
gcc -O2 -pthread -o "$work/splice_floor" benches/proxy/splice_floor.c
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
server=$(free_port); fault=$(free_port); hap=$(free_port); soc=$(free_port); floor=$(free_port)
iperf3 -s -p "$server" >/dev/null 2>&1 & pids+=($!)
target/release/fault run --proxy "$fault=127.0.0.1:$server" 2>"$work/fault.log" & pids+=($!)
fault_pid=$!
cat >"$work/haproxy.cfg" <<CFG
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
listen bulk
  bind 127.0.0.1:$hap
  option splice-request
  option splice-response
  server up 127.0.0.1:$server
CFG
haproxy -f "$work/haproxy.cfg" >/dev/null 2>&1 & pids+=($!)
hap_pid=$!
socat "TCP-LISTEN:$soc,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$server" 2>/dev/null & pids+=($!)
soc_pid=$!
"$work/splice_floor" "$floor" "$server" & pids+=($!)
floor_pid=$!
# CPU ticks of a process and its finished children.
ticks() { [ "$1" = 0 ] && echo 0 || awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
sleep 1

for round in $(seq "$ROUNDS"); do
    for path in direct:$server:0 fault:$fault:$fault_pid haproxy:$hap:$hap_pid socat:$soc:$soc_pid splice_floor:$floor:$floor_pid; do
        IFS=: read -r name port pid <<<"$path"
        before=$(ticks "$pid")
        mbps=$(iperf3 -c 127.0.0.1 -p "$port" -t "$SECONDS_PER_RUN" -J |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e6)')
        sleep 0.2 # let a forked relay exit, so its time is counted
        echo "$round $name $mbps $(($(ticks "$pid") - before))" >>"$work/runs"
    done
done
python3 - "$work/runs" "$ROUNDS" "$SECONDS_PER_RUN" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
runs, cpu = {}, {}
seconds, tck = float(sys.argv[3]), float(sys.argv[4])
for line in open(sys.argv[1]):
    r, name, mbps, ticks = line.split()
    runs.setdefault(name, {})[r] = float(mbps)
    # CPU seconds per GB moved in this round.
    cpu.setdefault(name, []).append((int(ticks) / tck) / (float(mbps) * seconds / 1000))
print(f"## Bulk pass-through, separate processes (iperf3, {sys.argv[2]} rounds × {sys.argv[3]} s, interleaved)\n")
print("| path | MB/s (median) | share of direct (median per round) | proxy CPU s per GB (median) |")
print("|---|---|---|---|")
for name, by_round in runs.items():
    shares = [by_round[r] / runs["direct"][r] for r in by_round]
    per_gb = "–" if name == "direct" else f"{statistics.median(cpu[name]):.2f}"
    print(f"| {name} | {statistics.median(by_round.values()):.0f} | {100 * statistics.median(shares):.0f}% | {per_gb} |")
PY
