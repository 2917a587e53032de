# The two commands a new machine needs (see README.md):
#   make run    install libnl, build, and watch the network (`netres watch`)
#   make test   install everything the suites drive (iproute2, Kamailio, sipp), lint, build,
#               typecheck the documentation's examples as outside code would, test,
#               build the DocC documentation with warnings as errors,
#               then run each fuzz target for FUZZ_CI_SECONDS (Fuzz/README.md)
#   make fuzz   run each fuzz target for FUZZ_SECONDS (default 300)
# Operators:
#   make install        netres and netres-ctl in $(PREFIX)/bin, its systemd unit, its man page and bash/zsh/fish
#                       completions, from one release build
#   make install-docs   only the man page and completions (`man netres` works after it)
#   make install-unit   only the systemd unit, ExecStart=$(PREFIX)/bin/netres, in $(UNITDIR)
SWIFT ?= swift
FORMAT_PATHS = Package.swift Sources Plugins Tests Benchmarks Fuzz
FUZZ_SECONDS ?= 300
FUZZ_CI_SECONDS ?= 20
PREFIX ?= /usr/local
DESTDIR ?=
# systemd reads units from /usr/lib/systemd/system and /usr/local/lib/systemd/system alike.
UNITDIR ?= $(PREFIX)/lib/systemd/system
# Every public module; a broken symbol link or a stale example fails `make docs`.
DOC_TARGETS = ResilienceCore ResilienceRules ResiliencePolicyFile ResilienceRuntime ResilienceTesting \
	NetlinkMonitor SIPPlugin HTTPGate NetworkLab

.PHONY: run test deps-run deps-test deps-install build lint docs bench fuzz install install-docs install-docs-from \
	install-unit clean

run: deps-run
	$(SWIFT) build -c release --product netres
	.build/release/netres watch $(ARGS)

# The fuzz targets come last and build in .build itself (FUZZ_BUILD_PATH): they reuse the compiled
# dependencies instead of building NIO and BoringSSL a second time in .build-fuzz (minutes of CI);
# the next ordinary build compiles this package's own modules again.
test: deps-test lint
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/typecheck-doc-examples.sh
	SWIFT=$(SWIFT) scripts/swift-test-bounded.sh
	$(MAKE) docs
	SWIFT=$(SWIFT) FUZZ_BUILD_PATH=.build scripts/fuzz.sh $(FUZZ_CI_SECONDS)

docs:
	$(SWIFT) package --disable-sandbox generate-documentation --warnings-as-errors \
		$(foreach target,$(DOC_TARGETS),--target $(target))

deps-run:
	scripts/install-deps.sh run

deps-test:
	scripts/install-deps.sh test
	scripts/install-deps.sh pjsua2

build: deps-run
	$(SWIFT) build

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

bench: deps-test
	$(SWIFT) build -c release --product netres
	$(SWIFT) build -c release --product netres-bench
	$(SWIFT) build -c release --product netres-ctl --static-swift-stdlib
	.build/release/netres-bench $(ARGS)

fuzz: deps-run
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_SECONDS) $(TARGETS)

install: deps-install
	$(SWIFT) build -c release --product netres
	install -D -m 0755 .build/release/netres $(DESTDIR)$(PREFIX)/bin/netres
	$(SWIFT) build -c release --product netres-ctl --static-swift-stdlib
	install -D -m 0755 .build/release/netres-ctl $(DESTDIR)$(PREFIX)/bin/netres-ctl
	$(MAKE) install-unit
	$(MAKE) install-docs-from NETRES=.build/release/netres

# The unit of examples/netres.service with ExecStart under PREFIX (the example names the default,
# /usr/local/bin/netres); `systemd-analyze verify` passes on it for PREFIX=/usr and /usr/local
# (SystemdUnitTests).
install-unit:
	mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's|^ExecStart=/usr/local/bin/netres |ExecStart=$(PREFIX)/bin/netres |' examples/netres.service \
		> $(DESTDIR)$(UNITDIR)/netres.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/netres.service
	grep -q '^ExecStart=$(PREFIX)/bin/netres ' $(DESTDIR)$(UNITDIR)/netres.service

# The man page comes from swift-argument-parser's generate-manual tool, the completions from
# `netres --generate-completion-script`: both from the same parser as `netres --help`. The tool is
# run on the netres just built: its `generate-manual` plugin would build every product of the
# package once more in release mode.
NETRES ?= .build/debug/netres
install-docs: deps-install
	$(SWIFT) build --product netres
	$(MAKE) install-docs-from NETRES=.build/debug/netres

install-docs-from:
	$(SWIFT) build --product generate-manual
	mkdir -p .build/manual
	.build/debug/generate-manual $(NETRES) --output-directory .build/manual
	install -D -m 0644 .build/manual/netres.1 $(DESTDIR)$(PREFIX)/share/man/man1/netres.1
	mkdir -p $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(NETRES) --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/netres
	$(NETRES) --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_netres
	$(NETRES) --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/netres.fish
	-[ -n "$(DESTDIR)" ] || mandb -q $(PREFIX)/share/man

deps-install:
	scripts/install-deps.sh install

clean:
	rm -rf .build .build-fuzz
