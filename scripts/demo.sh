#!/usr/bin/env bash
# Runs the whole system live on this machine: mosquitto, gpsd fed by gpsfake with a real receiver's
# log, and taxiunitd; prints every message the unit publishes. Ctrl-C stops everything it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$root" && swift build --show-bin-path)
# nmea-rtk.log: gpsd dates it 2020 on every loop (bu303-moving.log loops into 2005, dropped as week rollover).
log=${DEMO_GPS_LOG:-$root/../shared/gpsd-logs/nmea-rtk.log}
work=$(mktemp -d /tmp/taxiunitd-demo-XXXXXX)
pids=()

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cleanup() {
    trap - EXIT
    echo; echo "stopping..."
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    sleep 1
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# Each child gets a process group of its own (setsid), so gpsfake's gpsd dies with it.
start() { setsid "$@" & pids+=($!); }

mqtt_port=$(free_port)
gpsd_port=$(free_port)
cat > "$work/mosquitto.conf" <<CONF
listener $mqtt_port 127.0.0.1
allow_anonymous true
CONF
start mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1
start gpsfake -q -P "$gpsd_port" -c 0.2 "$log" > "$work/gpsfake.log" 2>&1

cat > "$work/taxiunitd.toml" <<CONF
[unit]
id = "T042"
fleet = "demo"
[gpsd]
port = $gpsd_port
[mqtt]
port = $mqtt_port
reconnect_max_s = 5
[store]
path = "$work/unit.sqlite"
[control]
socket = "$work/control.sock"
[reporting]
interval_s = 2
CONF

sleep 1
echo "broker 127.0.0.1:$mqtt_port, gpsd 127.0.0.1:$gpsd_port, replaying $(basename "$log")"
echo "try:  $bin/taxiunitctl --socket $work/control.sock status   (in another terminal)"
echo "----- MQTT traffic (topic payload) -----"
start mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t 'taxi/#' -v
start "$bin/taxiunitd" --config "$work/taxiunitd.toml" 2> "$work/taxiunitd.log"
wait "${pids[-1]}" || true
echo "taxiunitd exited; its log:"; tail -20 "$work/taxiunitd.log"
