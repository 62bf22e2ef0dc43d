# taxiunitd — `make demo` runs the whole system live, `make test` runs every test on the real parts.
SWIFT ?= swift
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DOCDIR ?= $(PREFIX)/share/doc/taxiunitd
# Where install-files takes the binaries from.
BUILT ?= .build/release
APT_PACKAGES := gpsd gpsd-clients mosquitto mosquitto-clients libgps-dev libmosquitto-dev \
	libsqlite3-dev socat libsystemd-dev sqlite3 systemd openssl python3
# The demo's screen is split by tmux.
DEMO_PACKAGES := tmux
# What a taxi runs, and what bench/ measures: the Swift runtime and Foundation linked in statically,
# and one section per function in every module, ours and the dependencies' (Swift, C, C++), so that
# the link (Package.swift) can place the code a taxi runs together (bench/README.md, "Memory").
# Product by product: a static runtime cannot link GRDB's dynamic library product.
RELEASE_FLAGS := -c release --static-swift-stdlib \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcxx -ffunction-sections
RELEASE_PRODUCTS := taxiunitd taxiunitctl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test fuzz demo bench-drain bench-fleet clean release release-bin-path install install-files symbol-order

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
# One test at a time: on a 2-core machine, dozens of daemons and gpsd replays at once starve each
# other and time out; the corpus test runs its replays concurrently by itself.
test: build
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --no-parallel

# A million property-based cases over every decoder and encoder that reads outside data; prints the count.
fuzz: build
	$(SWIFT) build --build-tests
	@FUZZ_SCALE=10 $(SWIFT) test --skip-build --filter FuzzTests > .build/fuzz.log 2>&1; status=$$?; cat .build/fuzz.log; \
	awk '/^fuzz: [^ ]+ [0-9]+ cases$$/ { n += $$3 } END { printf "fuzz: %d cases in all\n", n }' .build/fuzz.log; exit $$status

release: deps
	for product in $(RELEASE_PRODUCTS); do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done

# Where `release` puts the programs (bench/ runs them from there).
release-bin-path:
	@$(SWIFT) build $(RELEASE_FLAGS) --show-bin-path

# DESTDIR-aware; an existing /etc/taxiunitd/taxiunitd.toml is never overwritten.
install: release install-files
	@if [ -z "$(DESTDIR)" ]; then \
		echo "next: systemd-sysusers && systemctl daemon-reload && systemctl enable --now taxiunitd"; \
	fi

# The config holds no secrets (password and key live in files of their own): readable by the daemon.
# The terminal's catalogues go to $(PREFIX)/share/taxiunitd/lang, and a new config points there.
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DOCDIR)
	install -d $(DESTDIR)$(PREFIX)/share/taxiunitd/lang
	install -m 644 share/taxiunitd/lang/*.toml $(DESTDIR)$(PREFIX)/share/taxiunitd/lang/
	install -d -m 755 $(DESTDIR)$(SYSCONFDIR)/taxiunitd
	install -m 755 $(BUILT)/taxiunitd $(BUILT)/taxiunitctl $(DESTDIR)$(BINDIR)/
	sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/taxiunitd/|$(SYSCONFDIR)/taxiunitd/|g' \
		-e 's|/usr/local/share/doc/taxiunitd/|$(DOCDIR)/|g' \
		systemd/taxiunitd.service > $(DESTDIR)$(UNITDIR)/taxiunitd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/taxiunitd.service
	install -m 644 systemd/taxiunitd.sysusers $(DESTDIR)$(SYSUSERSDIR)/taxiunitd.conf
	install -m 644 README.md docs/protocol.md etc/mosquitto-acl.example $(DESTDIR)$(DOCDIR)/
	test -e $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml || { \
		sed -e 's|"/usr/share/taxiunitd/lang"|"$(PREFIX)/share/taxiunitd/lang"|' etc/taxiunitd.toml \
			> $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml && \
		chmod 644 $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml; }

demo:
	$(MAKE) build EXTRA_PACKAGES="$(DEMO_PACKAGES)"
	scripts/demo.sh

# Drains a 24 h backlog into a local mosquitto and compares with mosquitto_pub in the same run.
bench-drain: deps
	bench/drain.sh

# N real units against dispatchsim (bench/README.md); e.g. make bench-fleet ARGS="--units 200 --duration 120".
bench-fleet:
	bench/fleet.sh $(ARGS)

# Re-records which functions the daemon runs (scripts/taxiunitd.order) after its code has changed much.
symbol-order:
	$(MAKE) deps EXTRA_PACKAGES=valgrind
	scripts/symbol-order.sh

clean:
	rm -rf .build
