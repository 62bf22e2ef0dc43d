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
# Three sets of Debian 12 packages: what a taxi runs (the package's Depends:, packaging/taxiunitd.control),
# what building needs on top, and what the tests start or use on top of both.
APT_RUN := gpsd libgps28 libmosquitto1 libsqlite3-0 libsystemd0
APT_BUILD := libgps-dev libmosquitto-dev libsqlite3-dev libsystemd-dev pkg-config dpkg-dev
APT_TEST := gpsd-clients mosquitto mosquitto-clients socat sqlite3 systemd openssl python3 python3-jsonschema python3-yaml \
	prometheus python3-venv lintian device-tree-compiler reprepro gnupg chromium chromium-driver python3-selenium
# What the tests run from PyPI (not in Debian 12), in a virtual environment of their own.
PIP_TEST := check-jsonschema==0.39.0
TEST_TOOLS := .build/test-tools
APT_PACKAGES := $(APT_RUN) $(APT_BUILD) $(APT_TEST)
# The demo's screen is split by tmux.
DEMO_PACKAGES := tmux
# What a taxi runs, and what bench/ measures: the Swift runtime and FoundationEssentials linked in statically,
# and one section per function in every module, ours and the dependencies' (Swift, C, C++), so that
# the link (Package.swift) can place the code a taxi runs together (bench/README.md, "Memory").
# Product by product: SwiftPM builds one product or all of them, and a taxi runs two.
# SWIFT_BUILD_FLAGS: e.g. --swift-sdk aarch64-unknown-linux-gnu to cross-build (docs/boards.md).
# Full Foundation is not autolinked: taxiunitd and taxiunitctl use none of it, but TOMLKit (`import struct
# Foundation.Data`) and swift-crypto 3 autolink -lFoundation ahead of FoundationEssentials, and lld then
# takes a generic specialisation both define from Foundation, which brings CoreFoundation and ICU's
# 34 MB of data: taxiunitctl 63.1 MB stripped, 20.1 MB without (bench/README.md, "Footprint"). The
# programs that do use Foundation (taxifleet, dispatchsim) name it in Package.swift (fullFoundation).
NO_FOUNDATION_AUTOLINK := $(foreach library,Foundation FoundationInternationalization CoreFoundation _FoundationICU,\
	-Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc $(library))
RELEASE_FLAGS := -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS) \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcxx -ffunction-sections \
	$(NO_FOUNDATION_AUTOLINK)
RELEASE_PRODUCTS := taxiunitd taxiunitctl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test test-root fuzz deb man-pages deb-package repo demo bench-drain bench-fleet clean release release-bin-path install install-files symbol-order install-taxifleet deb-taxifleet deb-taxifleet-package

# Installs the Debian 12 packages the build and the tests need, only those missing.
deps:
	@missing=$$(for p in $(APT_PACKAGES) $(EXTRA_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@[ "$$(cat $(TEST_TOOLS)/installed 2>/dev/null)" = "$(PIP_TEST)" ] || { \
		/usr/bin/python3 -m venv $(TEST_TOOLS) && $(TEST_TOOLS)/bin/pip install -q $(PIP_TEST) && echo "$(PIP_TEST)" > $(TEST_TOOLS)/installed; }

build: deps
	$(SWIFT) build

# The tests start their own mosquitto, gpsd (gpsfake) and taxiunitd processes on free loopback ports.
# One test at a time: on a 2-core machine, dozens of daemons and gpsd replays at once starve each
# other and time out; the corpus test runs its replays concurrently by itself.
# Tests that run the daemon, the engine or the store against the real clock hold no literal epoch
# time (scripts/check-test-clock.py): a fixture dated last week is purged by the store's retention.
# Package.swift names every module a target imports (scripts/check-imports.py).
test: build
	python3 scripts/check-test-clock.py
	python3 scripts/check-imports.py
	$(SWIFT) build --build-tests
	$(MAKE) -s man-pages
	$(SWIFT) test --skip-build --no-parallel

# The tests that need root (a memory cgroup of their own, a tmpfs to fill); `make test` skips them.
test-root: build
	$(SWIFT) build --build-tests
	TAXIUNITD_ROOT_TESTS=1 $(SWIFT) test --skip-build --no-parallel --filter 'OversizedMessageTests|FullDiskTests'

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
	install -d -m 755 $(DESTDIR)$(SYSCONFDIR)/taxiunitd $(DESTDIR)$(SYSCONFDIR)/taxiunitd/conf.d
	install -m 755 $(BUILT)/taxiunitd $(BUILT)/taxiunitctl $(DESTDIR)$(BINDIR)/
	sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/taxiunitd/|$(SYSCONFDIR)/taxiunitd/|g' \
		-e 's|/usr/local/share/doc/taxiunitd/|$(DOCDIR)/|g' \
		systemd/taxiunitd.service > $(DESTDIR)$(UNITDIR)/taxiunitd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/taxiunitd.service
	install -m 644 systemd/taxiunitd.sysusers $(DESTDIR)$(SYSUSERSDIR)/taxiunitd.conf
	install -m 644 README.md docs/protocol.md etc/mosquitto-acl.example etc/mosquitto.conf.example $(DESTDIR)$(DOCDIR)/
	test -e $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml || { \
		sed -e 's|"/usr/share/taxiunitd/lang"|"$(PREFIX)/share/taxiunitd/lang"|' etc/taxiunitd.toml \
			> $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml && \
		chmod 644 $(DESTDIR)$(SYSCONFDIR)/taxiunitd/taxiunitd.toml; }

# A Debian package of the release build: build/taxiunitd_VERSION_ARCH.deb. The tree is what
# install-files lays out under /usr, the binaries stripped, plus man pages made from the programs'
# own --help (ArgumentParser's generate-manual plugin, `man-pages`) and taxiunitd.toml(5), shell
# completions the programs write, the maintainer scripts, copyright and changelog from packaging/,
# md5sums, and Depends computed by dpkg-shlibdeps. `deb-package` assembles it from BUILT without
# building anything (the tests package their own build with it); `lintian --pedantic` passes it.
# The one version: UnitCore's SoftwareVersion, which `taxiunitd --version` and the status print.
DEB_VERSION ?= $(shell sed -n 's/^ *public static let software = "\(.*\)"$$/\1/p' Sources/UnitCore/SoftwareVersion.swift)
DEB_ARCH ?= $(shell dpkg --print-architecture)
DEB_OUT ?= build
# Who answers for the package: a fleet building its own sets its own.
DEB_MAINTAINER ?= taxiunitd maintainers <taxiunitd@example.org>
# What dpkg-shlibdeps cannot see in the binaries: gpsd is a daemon the unit talks to, not a library.
DEB_EXTRA_DEPENDS := gpsd
# xz for boards; the tests package with gzip at level 1 (lintian refuses none; gzip's default
# level takes most of a package's build).
DEB_COMPRESS ?= xz
DEB_COMPRESS_LEVEL ?=
# The toolchain's llvm-objcopy strips any architecture the toolchain builds for; the host's strip
# reads only the host's.
OBJCOPY ?= $(dir $(realpath $(shell command -v $(SWIFT))))llvm-objcopy
MAN_PAGES := .build/plugins/GenerateManual/outputs
# Completion scripts, written by the host's build of the programs (`man-pages`), so that a cross-build
# has them too.
COMPLETIONS := .build/completions
DEB_PROGRAMS := taxiunitd taxiunitctl
deb: release man-pages
	$(MAKE) -s deb-package BUILT=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)

man-pages:
	$(SWIFT) package generate-manual --configuration debug --section 8 >/dev/null
	for program in $(DEB_PROGRAMS) taxifleet; do $(SWIFT) build --product $$program >/dev/null || exit 1; done
	mkdir -p $(COMPLETIONS)
	for program in $(DEB_PROGRAMS) taxifleet; do for shell in bash zsh; do \
		$$($(SWIFT) build --show-bin-path)/$$program --generate-completion-script $$shell > $(COMPLETIONS)/$$program.$$shell || exit 1; \
	done; done

deb-package:
	rm -rf $(DEB_OUT)/root && mkdir -p $(DEB_OUT)/root/DEBIAN
	$(MAKE) -s install-files DESTDIR=$(abspath $(DEB_OUT))/root PREFIX=/usr SYSCONFDIR=/etc
	install -d $(DEB_OUT)/root/usr/share/man/man5
	gzip -9n < packaging/taxiunitd.toml.5 > $(DEB_OUT)/root/usr/share/man/man5/taxiunitd.toml.5.gz
	install -m 644 docs/boards.md $(DEB_OUT)/root/usr/share/doc/taxiunitd/
	install -m 644 packaging/conffiles $(DEB_OUT)/root/DEBIAN/
	install -m 755 packaging/postinst packaging/prerm packaging/postrm $(DEB_OUT)/root/DEBIAN/
	$(call finish-deb,taxiunitd,root,$(DEB_PROGRAMS),$(DEB_EXTRA_DEPENDS))

# The fleet manager's console (docs/fleet.md) is for the office, not the taxi: a package of its own,
# build/taxifleet_VERSION_ARCH.deb, for the office's Debian machines, so the taxi's stays small.
# `deb-taxifleet-package` assembles it from BUILT, as `deb-package` does.
deb-taxifleet: man-pages
	$(SWIFT) build $(RELEASE_FLAGS) --product taxifleet
	$(MAKE) -s deb-taxifleet-package BUILT=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)

deb-taxifleet-package:
	rm -rf $(DEB_OUT)/taxifleet-root && mkdir -p $(DEB_OUT)/taxifleet-root/DEBIAN $(DEB_OUT)/taxifleet-root/usr/bin
	install -m 755 $(BUILT)/taxifleet $(DEB_OUT)/taxifleet-root/usr/bin/
	install -d $(DEB_OUT)/taxifleet-root/usr/share/doc/taxifleet
	install -m 644 docs/fleet.md $(DEB_OUT)/taxifleet-root/usr/share/doc/taxifleet/
	$(call finish-deb,taxifleet,taxifleet-root,taxifleet,)

# What every package of ours ends with, for package $(1) laid out in $(DEB_OUT)/$(2) with the
# programs $(3) and the Depends $(4) that dpkg-shlibdeps cannot see: the programs stripped, their man
# pages and completions, copyright, lintian overrides (packaging/$(1).lintian-overrides), changelog,
# md5sums, the control file (packaging/$(1).control) and the package.
define finish-deb
	for program in $(3); do $(OBJCOPY) --strip-unneeded --remove-section=.comment $(DEB_OUT)/$(2)/usr/bin/$$program || exit 1; done
	install -d $(DEB_OUT)/$(2)/usr/share/man/man8 $(DEB_OUT)/$(2)/usr/share/doc/$(1) $(DEB_OUT)/$(2)/usr/share/lintian/overrides
	for program in $(3); do \
		packaging/man-page.sh $(MAN_PAGES)/$$program/$$program.8 | gzip -9n > $(DEB_OUT)/$(2)/usr/share/man/man8/$$program.8.gz || exit 1; done
	install -d $(DEB_OUT)/$(2)/usr/share/bash-completion/completions $(DEB_OUT)/$(2)/usr/share/zsh/vendor-completions
	for program in $(3); do \
		sed '1{/^#!/d}' $(COMPLETIONS)/$$program.bash > $(DEB_OUT)/$(2)/usr/share/bash-completion/completions/$$program && \
		install -m 644 $(COMPLETIONS)/$$program.zsh $(DEB_OUT)/$(2)/usr/share/zsh/vendor-completions/_$$program || exit 1; done
	install -m 644 packaging/copyright $(DEB_OUT)/$(2)/usr/share/doc/$(1)/
	install -m 644 packaging/$(1).lintian-overrides $(DEB_OUT)/$(2)/usr/share/lintian/overrides/$(1)
	sed -e '1s/^taxiunitd /$(1) /' -e 's/@VERSION@/$(DEB_VERSION)/g' -e 's/@MAINTAINER@/$(DEB_MAINTAINER)/' \
		-e "s/@COMMIT@/$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)/" \
		-e "s/@DATE@/$$(date -R -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)})/" \
		packaging/changelog | gzip -9n > $(DEB_OUT)/$(2)/usr/share/doc/$(1)/changelog.gz
	cd $(DEB_OUT)/$(2) && find usr -type f | LC_ALL=C sort | xargs md5sum > DEBIAN/md5sums
	rm -rf $(DEB_OUT)/shlibdeps && mkdir -p $(DEB_OUT)/shlibdeps/debian && printf 'Source: taxiunitd\n\nPackage: $(1)\nArchitecture: any\n' > $(DEB_OUT)/shlibdeps/debian/control
	cd $(DEB_OUT)/shlibdeps && DEB_HOST_ARCH=$(DEB_ARCH) dpkg-shlibdeps -O $(addprefix $(abspath $(DEB_OUT))/$(2)/usr/bin/,$(3)) > substvars
	depends="$(4)"; found=$$(sed -n 's/^shlibs:Depends=//p' $(DEB_OUT)/shlibdeps/substvars); \
	depends="$${depends:+$$depends$${found:+, }}$$found"; \
	sed -e 's/@VERSION@/$(DEB_VERSION)/' -e 's/@ARCH@/$(DEB_ARCH)/' -e 's/@MAINTAINER@/$(DEB_MAINTAINER)/' \
		-e "s/@DEPENDS@/$$depends/" \
		-e "s/@SIZE@/$$(du -sk --exclude=DEBIAN $(DEB_OUT)/$(2) | cut -f1)/" packaging/$(1).control > $(DEB_OUT)/$(2)/DEBIAN/control
	rm -rf $(DEB_OUT)/shlibdeps
	dpkg-deb --root-owner-group -Z$(DEB_COMPRESS) $(if $(DEB_COMPRESS_LEVEL),-z$(DEB_COMPRESS_LEVEL)) --build $(DEB_OUT)/$(2) $(DEB_OUT)/$(1)_$(DEB_VERSION)_$(DEB_ARCH).deb
endef

# Fleet managers without Debian: the console installed by hand, with its man page.
install-taxifleet: deps man-pages
	$(SWIFT) build -c release --product taxifleet
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(DOCDIR)
	install -m 755 $$($(SWIFT) build -c release --show-bin-path)/taxifleet $(DESTDIR)$(BINDIR)/
	gzip -9n < $(MAN_PAGES)/taxifleet/taxifleet.8 > $(DESTDIR)$(PREFIX)/share/man/man8/taxifleet.8.gz
	install -m 644 docs/fleet.md $(DESTDIR)$(DOCDIR)/

# A signed apt repository for the fleet's boards and office (docs/boards.md, "Updates"): reprepro
# adds REPO_DEBS (default: what `make deb` and `make deb-taxifleet` built) to REPO_DIR, signing its
# Release files with REPO_KEY, a key of gpg's (GNUPGHOME); the public key goes beside them for the
# boards' signed-by=.
REPO_DIR ?= build/repo
REPO_SUITE ?= bookworm
REPO_DEBS ?= $(wildcard $(DEB_OUT)/taxiunitd_*.deb $(DEB_OUT)/taxifleet_*.deb)
repo:
	@[ -n "$(REPO_KEY)" ] || { echo "make repo: REPO_KEY=<fingerprint> names the gpg key that signs the repository" >&2; exit 1; }
	@[ -n "$(REPO_DEBS)" ] || { echo "make repo: no package (make deb, or REPO_DEBS=...)" >&2; exit 1; }
	mkdir -p $(REPO_DIR)/conf
	printf 'Origin: taxiunitd\nLabel: taxiunitd\nCodename: $(REPO_SUITE)\nArchitectures: amd64 arm64\nComponents: main\nDescription: taxiunitd for the fleet\nSignWith: $(REPO_KEY)\n' \
		> $(REPO_DIR)/conf/distributions
	for deb in $(REPO_DEBS); do reprepro -b $(REPO_DIR) --silent includedeb $(REPO_SUITE) $$deb || exit 1; done
	gpg --batch --yes --export $(REPO_KEY) > $(REPO_DIR)/taxiunitd-archive-keyring.gpg

# BIN=DIR: the programs from DIR (e.g. `make release-bin-path`'s), nothing built.
demo:
	$(if $(BIN),$(MAKE) deps,$(MAKE) build) EXTRA_PACKAGES="$(DEMO_PACKAGES)"
	BIN="$(BIN)" scripts/demo.sh

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
	rm -rf .build build
