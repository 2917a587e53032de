# The two commands a new machine needs (see README.md):
#   make run    install libnl, build, and watch the network (`netres watch`)
#   make test   install everything the suites drive (iproute2, Kamailio, sipp), lint, build, test,
#               then run each fuzz target for FUZZ_CI_SECONDS (Fuzz/README.md),
#               and build the DocC documentation with warnings as errors
#   make fuzz   run each fuzz target for FUZZ_SECONDS (default 300)
# Operators:
#   make install        netres in $(PREFIX)/bin, its man page and bash/zsh/fish completions
#   make install-docs   only the man page and completions (`man netres` works after it)
SWIFT ?= swift
FORMAT_PATHS = Package.swift Sources Plugins Tests Benchmarks Fuzz
FUZZ_SECONDS ?= 300
FUZZ_CI_SECONDS ?= 20
PREFIX ?= /usr/local
DESTDIR ?=
# Every public module; a broken symbol link or a stale example fails `make docs`.
DOC_TARGETS = ResilienceCore ResilienceRules ResiliencePolicyFile ResilienceRuntime ResilienceTesting \
	NetlinkMonitor SIPPlugin HTTPGate NetworkLab

.PHONY: run test deps-run deps-test deps-install build lint docs bench fuzz install install-docs clean

run: deps-run
	$(SWIFT) build -c release --product netres
	.build/release/netres watch $(ARGS)

test: deps-test lint
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/swift-test-bounded.sh
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_CI_SECONDS)
	$(MAKE) docs

docs:
	$(SWIFT) package --disable-sandbox generate-documentation --warnings-as-errors \
		$(foreach target,$(DOC_TARGETS),--target $(target))

deps-run:
	scripts/install-deps.sh run

deps-test:
	scripts/install-deps.sh test

build: deps-run
	$(SWIFT) build

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

bench: deps-test
	$(SWIFT) build -c release --product netres
	$(SWIFT) build -c release --product netres-bench
	.build/release/netres-bench $(ARGS)

fuzz: deps-run
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_SECONDS) $(TARGETS)

install: deps-install
	$(SWIFT) build -c release --product netres
	install -D -m 0755 .build/release/netres $(DESTDIR)$(PREFIX)/bin/netres
	$(MAKE) install-docs NETRES=.build/release/netres CONFIGURATION=release

# The man page comes from swift-argument-parser's generate-manual plugin, the completions from
# `netres --generate-completion-script`: both from the same parser as `netres --help`.
NETRES ?= .build/debug/netres
CONFIGURATION ?= debug
install-docs: deps-install
	$(SWIFT) build -c $(CONFIGURATION) --product netres
	$(SWIFT) package --disable-sandbox plugin generate-manual --configuration $(CONFIGURATION)
	install -D -m 0644 .build/plugins/GenerateManual/outputs/ResilienceCLI/netres.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/netres.1
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
