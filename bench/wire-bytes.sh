#!/usr/bin/env bash
# Bytes on the wire per position: the unit's live `pos`, its backfill batches and `pos/last`, against
# the OwnTracks `location` it publishes for the same fixes ([owntracks]), all measured in one run
# from what the broker delivers to a subscriber. MQTT framing is counted as the unit sends it
# (MQTT 3.1.1 PUBLISH: fixed header, remaining length, topic, packet id at QoS 1; plus the broker's
# 4-byte PUBACK for QoS 1); TCP/TLS overhead is the same per packet for both and left out.
# gpsfake replays the demo's drive through Midtown Manhattan (1 Hz, moving); the broker is down for
# the first OUTAGE seconds, so those fixes go out as backfill when it comes up, then LIVE seconds live.
# Usage: bench/wire-bytes.sh [live seconds, default 60] [outage seconds, default 30]
# TAXIUNITD_BIN_DIR: run the daemon from there instead of building it (bytes do not depend on the build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
live=${1:-60}
outage=${2:-30}
# Real time: the route is 1 Hz, two sentences a fix.
cycle=0.5

if [ -z "${TAXIUNITD_BIN_DIR:-}" ]; then
    make -s -C "$root" release >/dev/null
fi
bin=${TAXIUNITD_BIN_DIR:-$(make -s -C "$root" release-bin-path)}
work=$(mktemp -d /tmp/taxiunitd-wire-XXXXXX)
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

mqtt_port=$(free_port); gps_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$mqtt_port" "$([ "$(id -u)" = 0 ] && echo 'user root')" > "$work/mosquitto.conf"
setsid gpsfake -q -P "$gps_port" -c "$cycle" "$root/demo/manhattan-midtown.nmea" >"$work/gpsfake.log" 2>&1 & pids+=($!)
wait_port "$gps_port"

cat > "$work/unit.toml" <<TOML
[unit]
id = "T042"
fleet = "bench"
[gpsd]
port = $gps_port
[mqtt]
port = $mqtt_port
reconnect_min_s = 1
reconnect_max_s = 1
[store]
path = "$work/unit.sqlite"
[control]
socket = "$work/control.sock"
[reporting]
every_fix = true
[owntracks]
enabled = true
[log]
level = "warning"
TOML
setsid "$bin/taxiunitd" --config "$work/unit.toml" >"$work/taxiunitd.log" 2>&1 & pids+=($!)
sleep "$outage"

setsid mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
wait_port "$mqtt_port"
# The subscriber is up before the unit's next retry (1 s): it sees the backlog drain.
setsid mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -q 1 -i wire-bytes -F '%t %q %p' \
    -t taxi/bench/T042/pos -t taxi/bench/T042/pos/last -t owntracks/bench/T042 >"$work/messages.txt" 2>/dev/null & pids+=($!)
sleep "$live"

python3 - "$work/messages.txt" "$live" <<'PY'
import json, sys

def varint_size(n):
    size = 1
    while n >= 128:
        n //= 128
        size += 1
    return size

def publish_bytes(topic, qos, payload):
    remaining = 2 + len(topic) + (2 if qos else 0) + len(payload)
    return 1 + varint_size(remaining) + remaining

kinds = {"live": [], "backfill": [], "pos/last": [], "owntracks": []}
for line in open(sys.argv[1], "rb"):
    topic, qos, payload = line.rstrip(b"\n").split(b" ", 2)
    topic, qos = topic.decode(), int(qos)
    message = json.loads(payload)
    wire = publish_bytes(topic.encode(), qos, payload) + (4 if qos else 0)
    if topic.startswith("owntracks/"):
        kinds["owntracks"].append((len(payload), wire, 1))
    elif topic.endswith("/pos/last"):
        kinds["pos/last"].append((len(payload), wire, 1))
    elif message.get("backfill"):
        kinds["backfill"].append((len(payload), wire, len(message["points"])))
    else:
        kinds["live"].append((len(payload), wire, 1))

print(f"{'':12} {'messages':>8} {'points':>7} {'payload/msg':>12} {'max':>5} {'wire/point':>11}")
for kind, rows in kinds.items():
    if not rows:
        print(f"{kind:12} none")
        continue
    points = sum(r[2] for r in rows)
    print(f"{kind:12} {len(rows):8} {points:7} {sum(r[0] for r in rows) / len(rows):12.1f} {max(r[0] for r in rows):5}"
          f" {sum(r[1] for r in rows) / points:11.1f}")
live = kinds["live"]
if live and kinds["owntracks"]:
    per_live = sum(r[1] for r in live) / len(live)
    last = sum(r[1] for r in kinds["pos/last"]) / len(live)
    owntracks = sum(r[1] for r in kinds["owntracks"]) / len(kinds["owntracks"])
    print(f"live pos + its share of pos/last: {per_live + last:.1f} B/fix on the wire; OwnTracks location: {owntracks:.1f} B/fix"
          f" ({100 * (per_live + last) / owntracks:.0f} %)")
PY
