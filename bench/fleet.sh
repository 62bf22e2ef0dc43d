#!/usr/bin/env bash
# The fleet benchmark in one command (see bench/fleet.py and bench/README.md): release build, then a
# baseline fleet and the fleet under test in the same run. Arguments go to fleet.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make deps >/dev/null
swift build -c release --static-swift-stdlib --product taxiunitd
swift build -c release --static-swift-stdlib --product dispatchsim
exec python3 bench/fleet.py --bin "$(swift build -c release --static-swift-stdlib --show-bin-path)" "$@"
