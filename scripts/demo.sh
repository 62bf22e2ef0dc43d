#!/usr/bin/env bash
# Runs the whole system live: mosquitto; gpsd fed by gpsfake replaying a taxi's loop through Midtown
# Manhattan in real time (demo/manhattan-midtown.nmea); dispatchsim offering a job every minute
# (demo/scenario.toml); one taxiunitd whose serial terminal is on your console. tmux shows the
# unit's 20x4 terminal (top left: your keys go to the unit), the dispatcher's log (right) and the
# MQTT traffic (bottom left). Ctrl-C in the terminal pane stops everything and removes its files.
#
# DEMO_DETACHED=1 runs it without attaching (for scripted tests: tmux send-keys / capture-pane on
# the session it prints). BIN=DIR runs taxiunitd and dispatchsim from DIR (e.g. a release build)
# instead of this tree's debug build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build --show-bin-path)}
bin=$(cd "$bin" && pwd)
for program in taxiunitd dispatchsim; do
    [ -x "$bin/$program" ] || { echo "demo: no $program in $bin (BIN=DIR names a directory with taxiunitd and dispatchsim)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/taxiunitd-demo-XXXXXX)
session=taxiunitd-demo-$$
pids=()

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cleanup() {
    trap - EXIT INT TERM
    echo "stopping the demo..."
    tmux kill-session -t "$session" 2>/dev/null || true
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        alive=0
        for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
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
$( [ "$(id -u)" = 0 ] && echo "user root" )
CONF
start mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1
# The drive as if it started now: its times and dates moved to the system clock's. On a machine whose
# clock is not synchronised the unit keeps GPS time, and dispatchsim the system clock: with the
# log's own date the two would be days apart, and so would a reservation's countdown.
python3 - "$root/demo/manhattan-midtown.nmea" > "$work/drive.nmea" <<'PY'
import datetime, functools, operator, sys
lines = open(sys.argv[1]).read().splitlines()
def when(fields):  # GGA has the time, RMC the time and the date
    return datetime.datetime.strptime(fields[9] + fields[1][:6], "%d%m%y%H%M%S").replace(tzinfo=datetime.timezone.utc)
first = next(when(line.split(",")) for line in lines if line.startswith("$GPRMC"))
shift = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - first
date = first.date()
for line in lines:
    if line.startswith(("$GPGGA", "$GPRMC")):
        body, fields = line[1:line.index("*")], line[1:line.index("*")].split(",")
        if fields[0] == "GPRMC":
            date = when(fields).date()
        t = datetime.datetime.combine(date, datetime.datetime.strptime(fields[1][:6], "%H%M%S").time(), datetime.timezone.utc) + shift
        fields[1] = t.strftime("%H%M%S") + fields[1][6:]
        if fields[0] == "GPRMC":
            fields[9] = t.strftime("%d%m%y")
        body = ",".join(fields)
        line = "$%s*%02X" % (body, functools.reduce(operator.xor, body.encode(), 0))
    print(line)
PY
# 1 Hz GGA + RMC: two sentences a second is real time.
start gpsfake -q -P "$gpsd_port" -c 0.5 "$work/drive.nmea" > "$work/gpsfake.log" 2>&1

# A PTY pair joined by socat is the serial cable: the unit opens one end, your console the other.
start socat "pty,raw,echo=0,link=$work/unit-tty" "pty,raw,echo=0,link=$work/console-tty"

# The demo's driver: D-0417, PIN 2468, on the unit as a fleet would put it there: a salted
# PBKDF2-SHA256 hash (docs/protocol.md, "Drivers").
pin_hash=$(python3 -c 'import base64, hashlib, os; s = os.urandom(16); print("pbkdf2-sha256$210000$" + base64.b64encode(s).decode() + "$" + base64.b64encode(hashlib.pbkdf2_hmac("sha256", b"2468", s, 210000)).decode())')

cat > "$work/taxiunitd.toml" <<CONF
[unit]
id = "T042"
fleet = "demo"
catalogues = "$root/share/taxiunitd/lang"
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
interval_s = 5
[input.serial]
device = "$work/unit-tty"
[job]
currency = "USD"
[driver]
require_login = true
drivers = { "D-0417" = "$pin_hash" }
CONF
# The unit gets the dispatcher's zones, as a fleet's units do: its screen and status name the zone.
cat "$root/demo/zones.toml" >> "$work/taxiunitd.toml"
# escape=0x03: Ctrl-C ends the console instead of going down the cable.
console="socat -,raw,echo=0,escape=0x03 $work/console-tty,raw,echo=0"

for _ in $(seq 50); do [ -e "$work/unit-tty" ] && (exec 3<>"/dev/tcp/127.0.0.1/$mqtt_port") 2>/dev/null && break; sleep 0.1; done
start "$bin/taxiunitd" --config "$work/taxiunitd.toml" > "$work/taxiunitd.log" 2>&1
start "$bin/dispatchsim" --zones "$root/demo/zones.toml" --scenario "$root/demo/scenario.toml" \
    --port "$mqtt_port" --fleet demo --message-every 90 > "$work/dispatchsim.log" 2>&1

mqtt_view="mosquitto_sub -h 127.0.0.1 -p $mqtt_port -v -t 'taxi/#' -t 'dispatchsim/#' -F '@H:@M:@S %t %p' | sed -u 's# taxi/demo/# #'"
tmux new-session -d -s "$session" -x 200 -y 50 "$console"
# Whichever pane ends (Ctrl-C in the console), the demo ends.
tmux set-hook -t "$session" pane-exited "kill-session -t $session"
tmux split-window -h -t "$session:0.0" "tail -n +1 -f $work/dispatchsim.log"
tmux split-window -v -t "$session:0.0" -l 30 "$mqtt_view"
tmux set -t "$session" pane-border-status top
tmux select-pane -t "$session:0.0" -T "unit T042's 20x4 terminal: l login (D-0417, PIN 2468)  o logout  g language  d duty  a accept  r reject  h arrived  ENTER on board  c clear  n no-show  m msg  y reply  t send  Ctrl-L repaint  Ctrl-C stop"
tmux select-pane -t "$session:0.1" -T "MQTT traffic"
tmux select-pane -t "$session:0.2" -T "dispatchsim: a request a minute"
tmux select-pane -t "$session:0.0"
echo "demo running: broker 127.0.0.1:$mqtt_port, gpsd 127.0.0.1:$gpsd_port, tmux session $session"
echo "logs in $work (removed on exit)"

if [ -t 0 ] && [ -z "${DEMO_DETACHED:-}" ]; then
    tmux attach -t "$session" || true
else
    while tmux has-session -t "$session" 2>/dev/null; do sleep 1; done
fi
