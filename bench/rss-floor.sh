#!/usr/bin/env bash
# The resident set a program has before it does any of taxiunitd's work: it only loads and starts
# the C libraries the daemon must use (libmosquitto, libsqlite3, libgps, libsystemd) and, for Swift,
# the statically linked runtime and FoundationEssentials (the daemon links no more of Foundation),
# linked the way the release daemon is (lld, packed relative relocations, no exported symbols). Against the
# RSS targets (12 MB steady and per fleet unit, 20 MB at the drain's peak): what is left for the daemon itself.
# Usage: bench/rss-floor.sh
set -euo pipefail
work=$(mktemp -d /tmp/taxiunitd-floor-XXXXXX)
trap 'rm -rf "$work"' EXIT
libs=$(pkg-config --libs libmosquitto sqlite3 libgps libsystemd)

cat > "$work/libraries.h" <<'C'
#include <mosquitto.h>
#include <sqlite3.h>
#include <gps.h>
#include <systemd/sd-daemon.h>
C
# Each library is started the way the daemon starts it; gpsd is not there (port 1), which is fine.
cat > "$work/floor.c" <<'C'
#include "libraries.h"
#include <stdio.h>
#include <string.h>
int main(void) {
    mosquitto_lib_init(); struct mosquitto *m = mosquitto_new("floor", true, 0);
    sqlite3 *db; sqlite3_open(":memory:", &db); sqlite3_exec(db, "CREATE TABLE t(a); INSERT INTO t VALUES (1);", 0, 0, 0);
    struct gps_data_t g; gps_open("127.0.0.1", "1", &g); sd_notify(0, "READY=1");
    char line[256]; FILE *f = fopen("/proc/self/status", "r");
    while (fgets(line, sizeof line, f)) if (!strncmp(line, "VmRSS:", 6)) fputs(line + 6, stdout);
    return m == 0;
}
C
cat > "$work/floor.swift" <<'SWIFT'
import FoundationEssentials
mosquitto_lib_init(); let m = mosquitto_new("floor", true, nil)
var db: OpaquePointer?; sqlite3_open(":memory:", &db); sqlite3_exec(db, "CREATE TABLE t(a); INSERT INTO t VALUES (1);", nil, nil, nil)
var g = gps_data_t(); gps_open("127.0.0.1", "1", &g); sd_notify(0, "READY=1")
let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
print(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }!.dropFirst(6))
SWIFT
gcc -O2 -I"$work" "$work/floor.c" -o "$work/floor-c" $libs
swiftc -O -static-stdlib -import-objc-header "$work/libraries.h" "$work/floor.swift" -o "$work/floor-swift" $libs 2>/dev/null
swiftc -O -static-stdlib -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic \
    -import-objc-header "$work/libraries.h" "$work/floor.swift" -o "$work/floor-swift-lld" $libs 2>/dev/null
# Pages of a file just written count as private until written back (bench/README.md, "Memory").
sync
rss_kb() { "$1" | tr -dc '0-9'; }
awk -v c="$(rss_kb "$work/floor-c")" -v swift="$(rss_kb "$work/floor-swift")" -v lld="$(rss_kb "$work/floor-swift-lld")" 'BEGIN {
    floor = swift < lld ? swift : lld
    printf "%-66s %6.1f MB\n", "C: the four C libraries started, nothing else", c / 1024
    printf "%-66s %6.1f MB\n", "Swift: + static runtime and FoundationEssentials, default link", swift / 1024
    printf "%-66s %6.1f MB\n", "Swift: the same, linked as the release daemon (lld, DT_RELR)", lld / 1024
    printf "%-66s %6.1f MB\n", "left for the daemon itself under a 12 MB target", 12 - floor / 1024
    printf "%-66s %6.1f MB\n", "left for the daemon itself under a 20 MB target", 20 - floor / 1024
}'
