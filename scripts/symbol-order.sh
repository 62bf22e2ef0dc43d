#!/usr/bin/env bash
# Regenerates scripts/taxiunitd.order, the order in which the release link places the daemon's
# functions (Package.swift). The kernel maps a program's code in 16-page blocks around each page it
# runs; with the functions a running taxi uses side by side, the daemon's resident code shrinks from
# about 12 MB to about 6 MB (bench/README.md, "Memory"). A stale list only costs memory, never
# correctness: functions it does not name are linked after the ones it names.
#
# Records every function the release daemon runs under valgrind's callgrind: start-up, gpsd fixes
# from a gpsfake replay, positions queued while the broker is down, then the backlog drained when it
# comes up, status over the control socket, and shutdown; then a backlog drain (bench/drain.sh, small).
# Needs valgrind (make symbol-order).
# Usage: scripts/symbol-order.sh [seconds per phase, default 30]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
phase=${1:-30}
log=$root/../shared/gpsd-logs/nmea-rtk.log

cd "$root"
swift build -c release --static-swift-stdlib --product taxiunitd >/dev/null
swift build -c release --static-swift-stdlib --product taxiunitctl >/dev/null
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
work=$(mktemp -d /tmp/taxiunitd-order-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "nothing on port $1" >&2; exit 1; }

# valgrind 3.19 cannot read the toolchain's DWARF 5; the symbol table is all it needs.
mkdir "$work/bin"
strip --strip-debug -o "$work/bin/taxiunitd" "$bin/taxiunitd"
ln -s "$bin/taxiunitctl" "$work/bin/taxiunitctl"
mqtt_port=$(free_port); gps_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$mqtt_port" "$([ "$(id -u)" = 0 ] && echo 'user root')" > "$work/mosquitto.conf"
setsid gpsfake -q -P "$gps_port" -c 0.01 "$log" >"$work/gpsfake.log" 2>&1 & pids+=($!)
wait_port "$gps_port"
cat > "$work/unit.toml" <<TOML
[unit]
id = "ORDER"
fleet = "bench"
[gpsd]
port = $gps_port
[mqtt]
port = $mqtt_port
reconnect_min_s = 0.5
reconnect_max_s = 1
[store]
path = "$work/unit.sqlite"
[control]
socket = "$work/control.sock"
[reporting]
every_fix = true
[log]
level = "info"
TOML
setsid valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$work/bin/taxiunitd" --config "$work/unit.toml" >"$work/taxiunitd.log" 2>&1 & unit=$!; pids+=($unit)
sleep "$phase"
setsid mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
sleep "$phase"
"$bin/taxiunitctl" status --socket "$work/control.sock" >/dev/null
"$bin/taxiunitctl" status --json --socket "$work/control.sock" >/dev/null
kill -TERM "$unit"
wait "$unit" || true
grep -q "connected to broker" "$work/taxiunitd.log" || { cat "$work/taxiunitd.log"; echo "the daemon never reached the broker" >&2; exit 1; }

POSITIONS=5000 EVENTS=100 TAXIUNITD_BIN_DIR="$work/bin" \
    PERF="valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/drain.callgrind.out" \
    "$root/bench/drain.sh" >/dev/null

# Each named function once, in the order callgrind first names it; recursion marks ('2) stripped.
cat "$work/callgrind.out" "$work/drain.callgrind.out" | sed -n -E "s/^c?fn=\([0-9]+\) ([^']+)('[0-9]+)?$/\1/p" | grep -v '^0x' | awk '!seen[$0]++' \
    > "$root/scripts/taxiunitd.order"
# The linker reads the list, but the build does not track it: make the next release build link again.
rm -f "$bin/taxiunitd" "$bin/taxiunitctl"
echo "scripts/taxiunitd.order: $(wc -l < "$root/scripts/taxiunitd.order") functions; now: make release"
