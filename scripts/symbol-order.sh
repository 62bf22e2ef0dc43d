#!/usr/bin/env bash
# Regenerates scripts/taxiunitd.order, the order in which the release link places the daemon's
# functions (Package.swift). The kernel maps a program's code in 16-page blocks around each page it
# runs; with the functions a running taxi uses side by side, the daemon's resident code shrinks from
# about 12 MB to about 6 MB (bench/README.md, "Memory"). A stale list only costs memory, never
# correctness: functions it does not name are linked after the ones it names.
#
# Records every function the release daemon runs under valgrind's callgrind in two benches: the GPS
# replay (start-up, every fix stored and published, status over the control socket, shutdown) and a
# small backlog drain. Needs valgrind (make symbol-order).
# Usage: scripts/symbol-order.sh [seconds of GPS replay, default 30]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}

cd "$root"
make -s release >/dev/null
bin=$(make -s release-bin-path)
work=$(mktemp -d /tmp/taxiunitd-order-XXXXXX)
trap 'rm -rf "$work"' EXIT

# valgrind 3.19 cannot read the toolchain's DWARF 5; the symbol table is all it needs.
mkdir "$work/bin"
strip --strip-debug -o "$work/bin/taxiunitd" "$bin/taxiunitd"
ln -s "$bin/taxiunitctl" "$work/bin/taxiunitctl"
PERF="valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/gps.callgrind.out" \
    TAXIUNITD_BIN_DIR="$work/bin" "$root/bench/gps-cpu.sh" "$seconds" >/dev/null
POSITIONS=5000 EVENTS=100 TAXIUNITD_BIN_DIR="$work/bin" \
    PERF="valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/drain.callgrind.out" \
    "$root/bench/drain.sh" >/dev/null

# Each named function once, in the order callgrind first names it; recursion marks ('2) stripped.
cat "$work/gps.callgrind.out" "$work/drain.callgrind.out" | sed -n -E "s/^c?fn=\([0-9]+\) ([^']+)('[0-9]+)?$/\1/p" | grep -v '^0x' | awk '!seen[$0]++' \
    > "$work/recorded.order"
# Functions with a section of their own (.text.<name>: ours and the dependencies', RELEASE_FLAGS)
# first, so they lie side by side; then those inside the whole-object sections of the prebuilt Swift
# runtime and Foundation libraries, which an order can only move whole.
toolchain_static=$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift_static/linux
{ find "$bin/" -name '*.o' -print0; find "$toolchain_static" -name '*.a' -print0; } | xargs -0 readelf -SW 2>/dev/null \
    | sed -n -E 's/^ *\[ *[0-9]+\] \.text\.([^ ]+) .*/\1/p' | sort -u > "$work/own-section.txt"
awk 'NR == FNR { own[$0] = 1; next } ($0 in own) { print; next } { shared[++n] = $0 } END { for (i = 1; i <= n; i++) print shared[i] }' \
    "$work/own-section.txt" "$work/recorded.order" > "$root/scripts/taxiunitd.order"
# The linker reads the list, but the build does not track it: make the next release build link again.
rm -f "$bin/taxiunitd" "$bin/taxiunitctl"
echo "scripts/taxiunitd.order: $(wc -l < "$root/scripts/taxiunitd.order") functions; now: make release"
