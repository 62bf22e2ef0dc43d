#!/usr/bin/env bash
# The fleet benchmark in one command (see bench/fleet.py and bench/README.md): release build, then a
# baseline fleet and the fleet under test in the same run. Arguments go to fleet.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make -s release RELEASE_PRODUCTS="taxiunitd dispatchsim"
exec python3 bench/fleet.py --bin "$(make -s release-bin-path)" "$@"
