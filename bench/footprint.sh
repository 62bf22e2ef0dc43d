#!/usr/bin/env bash
# What a taxi downloads and runs, this tree against a baseline release built in the same run:
# stripped static binaries (and whether ICU's data is in them), the .deb, the daemon's steady PSS and
# private memory and its CPU per fix at ~48 fixes/s, and start to ready (READY=1 on NOTIFY_SOCKET).
# Both daemons, the `gpspipe | mosquitto_pub` pipeline and, when OCLI_BIN names a build of
# owntracks-cli-publisher (C, libgps + libmosquitto; not part of this project), that client watch one
# gpsd (gpsfake looping a real receiver's log) and publish to one mosquitto, in the same window.
# Usage: bench/footprint.sh [baseline commit, default main] [window seconds, default 40]
# BASELINE_BIN_DIR / TAXIUNITD_BIN_DIR: use those release builds instead of building them;
# FIX_CYCLE: gpsfake's pause between sentences (0.0095 s gives about 48 fixes a second).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
baseline=${1:-main}
seconds=${2:-40}
cycle=${FIX_CYCLE:-0.0095}
warmup=5
log=${BENCH_GPS_LOG:-$root/../shared/gpsd-logs/nmea-rtk.log}
work=$(mktemp -d /tmp/taxiunitd-footprint-XXXXXX)
pids=()
cleanup() {
    disown -a 2>/dev/null || true
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
    if [ -n "${base_tree:-}" ]; then git -C "$root" worktree remove --force "$base_tree" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The two release builds, the way `make release` makes them (nice: the machine may be shared).
if [ -z "${TAXIUNITD_BIN_DIR:-}" ]; then
    nice -n 10 make -s -C "$root" release >/dev/null
fi
new_bin=${TAXIUNITD_BIN_DIR:-$(make -s -C "$root" release-bin-path)}
if [ -z "${BASELINE_BIN_DIR:-}" ]; then
    base_tree=$work/baseline
    git -C "$root" worktree add --detach "$base_tree" "$baseline" >/dev/null 2>&1
    nice -n 10 make -s -C "$base_tree" release >/dev/null
fi
base_bin=${BASELINE_BIN_DIR:-$(make -s -C "$base_tree" release-bin-path)}
base_src=${base_tree:-$root}

# Sizes: stripped as the package strips them; .rodata of the unstripped file; ICU's data table.
sizes() { # label bin
    for program in taxiunitd taxiunitctl; do
        strip --strip-unneeded -o "$work/$1-$program" "$2/$program"
        rodata=$(( 0x$(readelf -SW "$2/$program" | awk '$2 == ".rodata" {print $6}') ))
        icu=$(nm "$2/$program" 2>/dev/null | grep -c ' icudt[0-9]*_dat$' || true)
        echo "$1 $program $(stat -c %s "$work/$1-$program") $rodata $icu"
    done
}
# The .deb as `make deb` assembles it (deb-package), each tree with its own Makefile; man pages
# from the generate-manual plugin when built, else each program's --help (a few kB either way).
deb_size() { # label bin tree
    man=$3/.build/plugins/GenerateManual/outputs
    if [ ! -d "$man" ]; then
        man=$work/$1-man
        for program in taxiunitd taxiunitctl; do mkdir -p "$man/$program"; "$2/$program" --help > "$man/$program/$program.8" 2>&1 || true; done
    fi
    make -s -C "$3" deb-package BUILT="$2" DEB_OUT="$work/$1-deb" MAN_PAGES="$man" >/dev/null 2>&1
    deb=$(ls "$work/$1-deb"/*.deb)
    echo "$1 deb $(stat -c %s "$deb") $(dpkg-deb -f "$deb" Installed-Size)"
}
{ sizes baseline "$base_bin"; sizes new "$new_bin"; deb_size baseline "$base_bin" "$base_src"; deb_size new "$new_bin" "$root"; } > "$work/sizes.txt"

# Below 32768: owntracks-cli-publisher reads MQTT_PORT into a 16-bit signed number.
free_port() { python3 -c '
import random, socket
while True:
    s = socket.socket(); port = random.randrange(20000, 32000)
    try: s.bind(("127.0.0.1", port)); print(port); break
    except OSError: pass'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "nothing on port $1" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
memory() { awk '/^Pss:/ {p = $2} /^Private_(Clean|Dirty):/ {v += $2} END {print p, v}' "/proc/$1/smaps_rollup"; }

mqtt_port=$(free_port); gps_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$mqtt_port" "$([ "$(id -u)" = 0 ] && echo 'user root')" > "$work/mosquitto.conf"
setsid mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
setsid gpsfake -q -P "$gps_port" -c "$cycle" "$log" >"$work/gpsfake.log" 2>&1 & pids+=($!)
wait_port "$mqtt_port"; wait_port "$gps_port"

config() { # label
    cat > "$work/$1.toml" <<TOML
[unit]
id = "$1"
fleet = "bench"
[gpsd]
port = $gps_port
[mqtt]
port = $mqtt_port
[store]
path = "$work/$1.sqlite"
[control]
socket = "$work/$1.sock"
[reporting]
every_fix = true
[log]
level = "warning"
TOML
}
# Start to ready: from exec to READY=1 on a notify socket, median of 5 starts on the same gpsd and
# broker (each with a new store).
ready_ms() { # label bin
    config "$1-ready"
    python3 - "$2/taxiunitd" "$work/$1-ready.toml" "$work/$1-ready.sqlite" "$work/$1-notify" <<'PY'
import os, socket, subprocess, sys, time, statistics
daemon, config, store, path = sys.argv[1:]
times = []
for _ in range(5):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix): os.remove(store + suffix)
    if os.path.exists(path): os.remove(path)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); notify.bind(path); notify.settimeout(30)
    started = time.monotonic()
    process = subprocess.Popen([daemon, "--config", config], env=dict(os.environ, NOTIFY_SOCKET=path),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while b"READY=1" not in notify.recv(4096): pass
    times.append((time.monotonic() - started) * 1000)
    process.terminate(); process.wait(); notify.close()
print(f"{statistics.median(times):.0f}")
PY
}

config baseline; config new
setsid "$base_bin/taxiunitd" --config "$work/baseline.toml" >"$work/baseline.log" 2>&1 & base_unit=$!; pids+=($base_unit)
setsid "$new_bin/taxiunitd" --config "$work/new.toml" >"$work/new.log" 2>&1 & new_unit=$!; pids+=($new_unit)
mkfifo "$work/pipe"
setsid gpspipe -w "127.0.0.1:$gps_port" >"$work/pipe" 2>/dev/null & gpspipe=$!; pids+=($gpspipe)
setsid mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -q 1 -l -t taxi/bench/PIPE/raw <"$work/pipe" & pub=$!; pids+=($pub)
ocli=""
if [ -n "${OCLI_BIN:-}" ]; then
    # Every fix it takes (OCLI_INTERVAL=0); it publishes at most one per second of GPS time.
    setsid mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t 'owntracks/#' >"$work/ocli.out" 2>/dev/null & pids+=($!)
    GPSD_HOST=127.0.0.1 GPSD_PORT=$gps_port MQTT_HOST=127.0.0.1 MQTT_PORT=$mqtt_port OCLI_INTERVAL=0 \
        BASE_TOPIC=owntracks/bench/ocli setsid "$OCLI_BIN" >"$work/ocli.log" 2>&1 & ocli=$!; pids+=($ocli)
fi
stored() { "$1/taxiunitctl" status --json --socket "$work/$2.sock" | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("stored_positions", d.get("storedPositions")))'; }
for label in baseline new; do for _ in $(seq 1 600); do [ -S "$work/$label.sock" ] && break; sleep 0.05; done; done
sleep "$warmup"
alive() { kill -0 "$1" 2>/dev/null || { echo "$2 ended early:" >&2; cat "$work/$2.log" >&2; exit 1; }; }
alive "$base_unit" baseline; alive "$new_unit" new; [ -z "$ocli" ] || alive "$ocli" ocli
b0=$(ticks "$base_unit"); n0=$(ticks "$new_unit"); p0=$(( $(ticks "$gpspipe") + $(ticks "$pub") ))
bf0=$(stored "$base_bin" baseline); nf0=$(stored "$new_bin" new)
o0=0; om0=0; if [ -n "$ocli" ]; then o0=$(ticks "$ocli"); om0=$(wc -l < "$work/ocli.out"); fi
sleep "$seconds"
b1=$(ticks "$base_unit"); n1=$(ticks "$new_unit"); p1=$(( $(ticks "$gpspipe") + $(ticks "$pub") ))
bf1=$(stored "$base_bin" baseline); nf1=$(stored "$new_bin" new)
o1=0; om1=0; oc_mem="0 0"; if [ -n "$ocli" ]; then o1=$(ticks "$ocli"); om1=$(wc -l < "$work/ocli.out"); oc_mem=$(memory "$ocli"); fi
base_mem=$(memory "$base_unit"); new_mem=$(memory "$new_unit")
alive "$base_unit" baseline; alive "$new_unit" new
# After the window, beside the running daemons: gpsfake stops once its last client leaves.
base_ready=$(ready_ms baseline "$base_bin"); new_ready=$(ready_ms new "$new_bin")

python3 - "$work/sizes.txt" "$seconds" "$(getconf CLK_TCK)" "$base_ready" "$new_ready" \
    "$((bf1 - bf0)) $((b1 - b0)) $base_mem" "$((nf1 - nf0)) $((n1 - n0)) $new_mem" \
    "$((p1 - p0))" "$((om1 - om0)) $((o1 - o0)) $oc_mem" "$([ -n "$ocli" ] && echo 1 || echo 0)" <<'PY'
import sys
sizes_file, seconds, hz, base_ready, new_ready, base_run, new_run, pipe_ticks, ocli_run, have_ocli = sys.argv[1:]
seconds, hz = float(seconds), float(hz)
sizes = {}
for line in open(sizes_file):
    label, what, *numbers = line.split()
    sizes[(label, what)] = [int(n) for n in numbers]
mb = lambda b: f"{b / 1e6:.1f} MB"
def row(name, base, new, target=""):
    print(f"{name:44}{base:>16}{new:>16}  {target}")
print(f"{'':44}{'baseline':>16}{'this tree':>16}  target")
for program, limit in (("taxiunitd", 25e6), ("taxiunitctl", 10e6)):
    (b, brodata, bicu), (n, nrodata, nicu) = sizes[("baseline", program)], sizes[("new", program)]
    row(f"{program}, static, stripped", mb(b), mb(n), f"<= {mb(limit)}: {'met' if n <= limit else 'NOT met'}")
    row(f"  .rodata; ICU data linked", f"{mb(brodata)}; {'yes' if bicu else 'no'}", f"{mb(nrodata)}; {'yes' if nicu else 'no'}")
(b, binst), (n, ninst) = sizes[("baseline", "deb")], sizes[("new", "deb")]
row(".deb (xz); installed", f"{mb(b)}; {binst / 1000:.0f} MB", f"{mb(n)}; {ninst / 1000:.0f} MB", f"<= 15.0 MB: {'met' if n <= 15e6 else 'NOT met'}")
runs = {}
for label, text in (("baseline", base_run), ("new", new_run)):
    fixes, ticks, pss, private = (float(v) for v in text.split())
    if fixes <= 0: sys.exit(f"{label}: no fixes in the window: is gpsfake feeding?")
    runs[label] = (fixes, ticks / hz / fixes * 1e6, pss, private)
(bfix, bcpu, bpss, bpriv), (nfix, ncpu, npss, npriv) = runs["baseline"], runs["new"]
row("fixes stored a second", f"{bfix / seconds:.1f}", f"{nfix / seconds:.1f}", "(every fix stored and published)")
row("steady PSS", mb(bpss * 1024), mb(npss * 1024), f"<= 8.0 MB: {'met' if npss * 1024 <= 8e6 else 'NOT met'}")
row("steady private", mb(bpriv * 1024), mb(npriv * 1024), f"<= 7.0 MB: {'met' if npriv * 1024 <= 7e6 else 'NOT met'}")
row("CPU per fix", f"{bcpu:.0f} µs", f"{ncpu:.0f} µs")
pipe = float(pipe_ticks) / hz / nfix * 1e6
row("  gpspipe | mosquitto_pub, per fix", f"{pipe:.0f} µs", "")
if have_ocli == "1":
    published, ticks, pss, private = (float(v) for v in ocli_run.split())
    if published > 0:
        ocli = ticks / hz / published * 1e6
        row("  owntracks-cli-publisher, per published fix", f"{ocli:.0f} µs", f"PSS {mb(pss * 1024)}")
        row("  ratio to owntracks-cli-publisher", f"{bcpu / ocli:.2f}x", f"{ncpu / ocli:.2f}x",
            f"<= 0.60x: {'met' if ncpu <= 0.6 * ocli else 'NOT met'}")
row("start to ready (median of 5)", f"{base_ready} ms", f"{new_ready} ms", "unchanged (about 50 ms)")
PY
