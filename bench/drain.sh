#!/usr/bin/env bash
# Drain benchmark: a 24 h backlog at 1 Hz (86,400 positions) plus 500 events drained by
# the real taxiunitd (release build) into a local mosquitto at QoS 1, against the limit measured in
# the same run: the very same payloads published by mosquitto_pub -l as fast as the broker takes them.
# Prints message rates, drain time, peak RSS and bytes on the wire per position against the targets.
set -euo pipefail
cd "$(dirname "$0")/.."

POSITIONS=${POSITIONS:-86400}
EVENTS=${EVENTS:-500}
if [ -z "${TAXIUNITD_BIN_DIR:-}" ]; then make -s release >&2; fi
BIN=${TAXIUNITD_BIN_DIR:-$(make -s release-bin-path)}

WORK=$(mktemp -d /tmp/taxiunitd-bench-XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-60000 -n 1; }
wait_for() { for _ in $(seq 200); do eval "$1" && return 0; sleep 0.05; done; echo "timed out: $1" >&2; return 1; }
now() { date +%s.%N; }

PORT=$(free_port)
cat > "$WORK/mosquitto.conf" <<EOF
listener $PORT 127.0.0.1
allow_anonymous true
max_queued_messages 0
max_inflight_messages 0
$( [ "$(id -u)" = 0 ] && echo "user root" )
EOF
mosquitto -c "$WORK/mosquitto.conf" > "$WORK/mosquitto.log" 2>&1 &
PIDS+=($!)
wait_for "mosquitto_pub -p $PORT -t bench/ping -m x 2>/dev/null"

cat > "$WORK/unit.toml" <<EOF
[unit]
id = "B1"
fleet = "bench"
[gpsd]
port = $(free_port)
[mqtt]
port = $PORT
reconnect_min_s = 0.1
reconnect_max_s = 0.5
[store]
path = "$WORK/unit.sqlite"
[control]
socket = "$WORK/control.sock"
[log]
level = "${LOG_LEVEL:-warning}"
EOF

# The schema comes from the daemon itself: start it once with no broker, then stop it.
sed "s/^port = $PORT/port = 1/" "$WORK/unit.toml" > "$WORK/schema.toml"
"$BIN/taxiunitd" --config "$WORK/schema.toml" 2> "$WORK/schema.log" &
SCHEMA_PID=$!
wait_for "[ -S $WORK/control.sock ]"
kill -TERM $SCHEMA_PID; wait $SCHEMA_PID || true

# A city taxi's day: speed 0-14 m/s in traffic-light cycles, heading drifting, GPS accuracy 3-5 m.
NOW_MS=$(( $(date +%s) * 1000 ))
sqlite3 "$WORK/unit.sqlite" <<EOF
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $POSITIONS - 1),
track AS (
    SELECT i, max(0, 14 * sin((i % 90) * 3.14159 / 90) - 2) AS spd, (i / 7 * 3 + (i % 5)) % 360 AS hdg,
           ((i * 7919) % 11 - 5) * 5e-7 AS jitter
    FROM n),
moving AS (
    SELECT i, spd, hdg, jitter,
           sum(spd * cos(radians(hdg)) / 111320) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS north,
           sum(spd * sin(radians(hdg)) / 76630) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS east
    FROM track)
INSERT INTO position_queue (created_at, t, lat, lon, spd, hdg, acc)
SELECT $NOW_MS - ($POSITIONS - i) * 1000, 1795000000000 + i * 1000, 46.5 + north + jitter, 7.5 + east - jitter,
       round(spd, 2), round(hdg, 1), 3 + (i % 5) * 0.5
FROM moving;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $EVENTS)
INSERT INTO outbox (message_id, topic, class, lane, qos, payload, created_at, points)
SELECT 'bench-event-' || i, 'event', 2, 2, 1,
       CAST('{"event":"meter","id":"bench-event-' || i || '","seq":' || i || ',"t":' || ($NOW_MS + i) || ',"unit":"B1"}' AS BLOB),
       $NOW_MS, 0
FROM n;
EOF

record() { # $1: output file; records every payload with its arrival time until $2 messages arrived
    timeout 120 mosquitto_sub -p "$PORT" -q 1 -t 'taxi/#' -t 'limit/#' -T taxi/bench/B1/status -F '%U %l %t %p' -C "$2" > "$1" &
    echo $!
}

MESSAGES_EXPECTED=$(( EVENTS + 1 + (POSITIONS - 1 + 49) / 50 ))

# 1. The daemon drains the backlog.
SUB=$(record "$WORK/daemon.txt" "$MESSAGES_EXPECTED"); PIDS+=("$SUB")
sleep 0.3
START=$(now)
${PERF:-} "$BIN/taxiunitd" --config "$WORK/unit.toml" 2> "$WORK/daemon.log" &
DAEMON=$!; PIDS+=("$DAEMON")
PEAK_KB=0
PEAK_ANON_KB=0
while kill -0 "$SUB" 2>/dev/null; do
    ANON=$(awk '/RssAnon/ {print $2}' /proc/$DAEMON/status 2>/dev/null || echo 0)
    [ "${ANON:-0}" -gt "$PEAK_ANON_KB" ] && PEAK_ANON_KB=$ANON
    sleep 0.02
done
RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON/status); [ "$RSS" -gt "$PEAK_KB" ] && PEAK_KB=$RSS
DEPTH=$("$BIN/taxiunitctl" status --json --socket "$WORK/control.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["outbox"]["depth"])' 2>/dev/null || echo "?")
CPU_S=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' /proc/$DAEMON/stat)
kill -TERM "$DAEMON"; wait "$DAEMON" || true

# 2. The limit: the same payloads, same count and bytes, from mosquitto_pub as fast as the broker takes them.
cut -d' ' -f4- "$WORK/daemon.txt" > "$WORK/payloads.txt"
SUB=$(record "$WORK/limit.txt" "$(wc -l < "$WORK/payloads.txt")"); PIDS+=("$SUB")
sleep 0.3
mosquitto_pub -p "$PORT" -q 1 -t limit/bench/B1/pos -l < "$WORK/payloads.txt"
wait "$SUB" 2>/dev/null || true

awk -v start="$START" -v peak="$PEAK_KB" -v anon="$PEAK_ANON_KB"  -v depth="$DEPTH" -v cpu="$CPU_S" -v positions="$POSITIONS" '
function summarise(file,   line, f, n, first, last, bytes) {
    n = 0; bytes = 0
    while ((getline line < file) > 0) {
        split(line, f, " ")
        if (n == 0) first = f[1]
        last = f[1]; n++
    }
    close(file)
    count[file] = n; span[file] = last - first; firstAt[file] = first; lastAt[file] = last
}
BEGIN {
    summarise(ARGV[1]); summarise(ARGV[2])
    # Bytes on the wire for positions: MQTT PUBLISH (fixed header, topic, packet id, payload) + PUBACK.
    points = 0; wire = 0
    while ((getline line < ARGV[1]) > 0) {
        split(line, f, " ")
        if (f[3] !~ /\/pos$/) continue
        body = 2 + length(f[3]) + 2 + f[2]
        header = 1 + (body < 128 ? 1 : body < 16384 ? 2 : 3)
        wire += header + body + 4
        n = gsub(/\],\[/, "", line) + 1
        points += (line ~ /"backfill":true/) ? n : 1
    }
    d = ARGV[1]; l = ARGV[2]
    drate = count[d] / span[d]; lrate = count[l] / span[l]
    printf "backlog: %d positions + events, drained as %d messages\n", positions, count[d]
    printf "%-34s %12s %12s\n", "", "taxiunitd", "mosquitto_pub"
    printf "%-34s %12d %12d\n", "messages", count[d], count[l]
    printf "%-34s %12.3f %12.3f\n", "first to last message (s)", span[d], span[l]
    printf "%-34s %12.0f %12.0f\n", "messages/s", drate, lrate
    printf "\n"
    printf "%-44s %10s   %s\n", "figure", "value", "target"
    printf "%-44s %9.1f%%   >= 80%%  %s\n", "drain rate vs limit", 100 * drate / lrate, (drate >= 0.8 * lrate ? "ok" : "MISSED")
    printf "%-44s %10.2f\n", "process start to first message (s)", firstAt[d] - start
    whole = lastAt[d] - start
    printf "%-44s %10.2f   < 10 s  %s\n", "process start to last message, whole backlog (s)", whole, (whole < 10 ? "ok" : "MISSED")
    printf "%-44s %10.1f   <= 20   %s\n", "peak RSS of taxiunitd (MB)", peak / 1024, (peak / 1024 <= 20 ? "ok" : "MISSED")
    printf "%-44s %10.1f   (the rest is shared library code)\n", "  of which private memory, peak (MB)", anon / 1024
    printf "%-44s %10.1f   <= 30   %s\n", "bytes on the wire per position", wire / points, (wire / points <= 30 ? "ok" : "MISSED")
    printf "%-44s %10d\n", "positions received", points
    printf "%-44s %10.2f\n", "CPU time of taxiunitd, start to drained (s)", cpu
    printf "%-44s %10s\n", "outbox depth left after the drain", depth
    exit 0
}' "$WORK/daemon.txt" "$WORK/limit.txt"
