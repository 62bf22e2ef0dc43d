#!/bin/sh
# Key press on the serial terminal → job/reply PUBLISH, p50/p99 over 1,000 presses (PRESSES=n),
# against release builds of the daemon, with baselines measured in the same run. Needs mosquitto
# and socat (make deps).
set -eu
cd "$(dirname "$0")/.."
swift build -c release --static-swift-stdlib --product taxiunitd
swift build -c release --static-swift-stdlib --product taxiunitctl
swift build -c release --static-swift-stdlib --product terminal-latency-bench
TAXIUNITD_BIN_DIR="$(swift build -c release --static-swift-stdlib --show-bin-path)" "$(swift build -c release --static-swift-stdlib --show-bin-path)/terminal-latency-bench"
