#!/usr/bin/env bash
# taxifleet against N real units in one command (see bench/taxifleet.py and bench/README.md):
# release build, then status, push and the live page, each beside its baseline. Arguments go to
# taxifleet.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make -s release RELEASE_PRODUCTS="taxiunitd taxifleet"
exec python3 bench/taxifleet.py --bin "$(make -s release-bin-path)" "$@"
