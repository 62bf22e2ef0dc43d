#!/bin/sh
# Key press on the serial terminal → job/reply PUBLISH, p50/p99 over 1,000 presses (PRESSES=n),
# against release builds of the daemon, with baselines measured in the same run. Needs mosquitto
# and socat (make deps).
set -eu
cd "$(dirname "$0")/.."
make -s release RELEASE_PRODUCTS="taxiunitd taxiunitctl terminal-latency-bench"
bin=$(make -s release-bin-path)
TAXIUNITD_BIN_DIR="$bin" "$bin/terminal-latency-bench"
