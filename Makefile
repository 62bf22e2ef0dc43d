# taxiunitd — `make demo` runs the whole system live, `make test` runs every test on the real parts.
SWIFT ?= swift
PREFIX ?= /usr/local
APT_PACKAGES := gpsd gpsd-clients mosquitto mosquitto-clients libgps-dev libmosquitto-dev \
	libsqlite3-dev socat libsystemd-dev sqlite3
# The demo's screen is split by tmux.
DEMO_PACKAGES := tmux
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test demo bench-drain bench-fleet clean

# Installs the Debian 12 packages the build and the tests need, only those missing.
deps:
	@missing=$$(for p in $(APT_PACKAGES) $(EXTRA_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

# The tests start their own mosquitto, gpsd (gpsfake) and taxiunitd processes on free loopback ports.
test: build
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo:
	$(MAKE) build EXTRA_PACKAGES="$(DEMO_PACKAGES)"
	scripts/demo.sh

# Drains a 24 h backlog into a local mosquitto and compares with mosquitto_pub in the same run.
bench-drain: deps
	$(SWIFT) build -c release
	bench/drain.sh

# N real units against dispatchsim (bench/README.md); e.g. make bench-fleet ARGS="--units 200 --duration 120".
bench-fleet:
	bench/fleet.sh $(ARGS)

clean:
	rm -rf .build
