#!/usr/bin/env bash
# CPU per fix and memory of taxiunitd against the pipeline a user would otherwise run,
#   gpspipe -w | mosquitto_pub -l -q 1 -t ...
# both watching the same gpsd (gpsfake looping a real receiver's log), measured in the same run.
# taxiunitd reports every valid fix (every_fix = true), so it stores, filters and publishes each one.
# Usage: bench/gps-cpu.sh [seconds, default 60] [cycle between sentences, default 0.005]
# TAXIUNITD_BIN_DIR: run the daemon from there instead of building it; PERF: a command to run it
# under (scripts/symbol-order.sh records it with valgrind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
cycle=${2:-0.005}
warmup=5
# gpsd dates nmea-rtk.log 2020 on every pass, 10 fixes per second of the receiver's time.
log=${BENCH_GPS_LOG:-$root/../shared/gpsd-logs/nmea-rtk.log}

if [ -z "${TAXIUNITD_BIN_DIR:-}" ]; then
    make -s -C "$root" release >/dev/null
fi
bin=${TAXIUNITD_BIN_DIR:-$(make -s -C "$root" release-bin-path)}
work=$(mktemp -d /tmp/taxiunitd-bench-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "nothing on port $1" >&2; exit 1; }
# user+sys CPU of a process so far, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Times its threads went to sleep waiting (all threads so far): wakeups, which cost CPU on any machine.
wakeups() { awk '/^voluntary_ctxt_switches/ {s += $2} END {print s}' /proc/"$1"/task/*/status; }
stored() { "$bin/taxiunitctl" status --json --socket "$work/control.sock" | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("stored_positions", d.get("storedPositions")))'; }

mqtt_port=$(free_port); gps_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$mqtt_port" "$([ "$(id -u)" = 0 ] && echo 'user root')" > "$work/mosquitto.conf"
setsid mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
setsid gpsfake -q -P "$gps_port" -c "$cycle" "$log" >"$work/gpsfake.log" 2>&1 & pids+=($!)
wait_port "$mqtt_port"; wait_port "$gps_port"

cat > "$work/unit.toml" <<TOML
[unit]
id = "BENCH"
fleet = "bench"
[gpsd]
port = $gps_port
[mqtt]
port = $mqtt_port
[store]
path = "$work/unit.sqlite"
[control]
socket = "$work/control.sock"
[reporting]
every_fix = true
[log]
level = "warning"
TOML
setsid ${PERF:-} "$bin/taxiunitd" --config "$work/unit.toml" >"$work/taxiunitd.log" 2>&1 & unit=$!; pids+=($unit)
mkfifo "$work/pipe"
setsid gpspipe -w "127.0.0.1:$gps_port" >"$work/pipe" 2>/dev/null & gpspipe=$!; pids+=($gpspipe)
setsid mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -q 1 -l -t taxi/bench/PIPE/raw <"$work/pipe" & pub=$!; pids+=($pub)

for _ in $(seq 1 600); do [ -S "$work/control.sock" ] && break; sleep 0.05; done
sleep "$warmup"
unit0=$(ticks "$unit"); pipe0=$(( $(ticks "$gpspipe") + $(ticks "$pub") )); fixes0=$(stored)
wake0=$(wakeups "$unit"); pipewake0=$(( $(wakeups "$gpspipe") + $(wakeups "$pub") ))
sleep "$seconds"
unit1=$(ticks "$unit"); pipe1=$(( $(ticks "$gpspipe") + $(ticks "$pub") )); fixes1=$(stored)
wake1=$(wakeups "$unit"); pipewake1=$(( $(wakeups "$gpspipe") + $(wakeups "$pub") ))
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$unit/status")
hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$unit/status")
# What RSS is made of (bench/README.md, "Memory"): PSS splits shared pages among their users,
# private pages are the daemon's own (dirty ones cannot be dropped by the kernel).
read -r pss_kb private_kb dirty_kb < <(awk '/^Pss:/ {p = $2} /^Private_(Clean|Dirty):/ {v += $2} /^Private_Dirty:/ {d = $2}
    END {print p, v, d}' "/proc/$unit/smaps_rollup")
pipe_rss_kb=$(( $(awk '/^VmRSS/ {print $2}' "/proc/$gpspipe/status") + $(awk '/^VmRSS/ {print $2}' "/proc/$pub/status") ))
kill -0 "$unit" || { echo "taxiunitd died:"; cat "$work/taxiunitd.log"; exit 1; }
# A graceful stop, so that a PERF wrapper writes its profile.
kill -TERM "$unit"; wait "$unit" || true

hz=$(getconf CLK_TCK)
python3 - "$seconds" "$hz" "$((fixes1 - fixes0))" "$((unit1 - unit0))" "$((pipe1 - pipe0))" "$rss_kb" "$hwm_kb" "$pipe_rss_kb" \
    "$((wake1 - wake0))" "$((pipewake1 - pipewake0))" "$pss_kb" "$private_kb" "$dirty_kb" <<'PY'
import sys
seconds, hz, fixes, unit, pipe, rss, hwm, pipe_rss, unit_wakes, pipe_wakes, pss, private, dirty = (float(a) for a in sys.argv[1:])
if fixes <= 0:
    sys.exit("no fixes in the window: is gpsfake feeding?")
per = lambda ticks: ticks / hz / fixes * 1e6
print(f"window {seconds:.0f} s, {fixes:.0f} valid fixes ({fixes / seconds:.1f}/s), same gpsd, same window")
print(f"{'':34}{'CPU user+sys':>14}{'per fix':>12}{'RSS':>10}{'wakeups/fix':>13}")
print(f"{'taxiunitd (store+filter+publish)':34}{unit / hz:>12.2f} s{per(unit):>9.0f} µs{rss / 1024:>7.1f} MB{unit_wakes / fixes:>13.1f}")
print(f"{'gpspipe -w | mosquitto_pub -l':34}{pipe / hz:>12.2f} s{per(pipe):>9.0f} µs{pipe_rss / 1024:>7.1f} MB{pipe_wakes / fixes:>13.1f}")
print(f"taxiunitd peak RSS {hwm / 1024:.1f} MB; now PSS {pss / 1024:.1f} MB, private {private / 1024:.1f} MB (dirty {dirty / 1024:.1f} MB)")
cpu_ok = unit <= pipe
rss_ok = rss <= 12 * 1024
print(f"CPU per fix target (<= pipeline): {'met' if cpu_ok else 'NOT met'} ({unit / pipe if pipe else float('inf'):.2f}x the pipeline)")
print(f"steady RSS target (<= 12 MB): {'met' if rss_ok else 'NOT met'}")
PY
