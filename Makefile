# The two commands a new machine needs (see README.md):
#   make run    install libnl, build, and watch the network (`netres watch`)
#   make test   install everything the suites drive (iproute2, Kamailio, sipp), lint, build, test,
#               then run each fuzz target for FUZZ_CI_SECONDS (Fuzz/README.md)
#   make fuzz   run each fuzz target for FUZZ_SECONDS (default 300)
SWIFT ?= swift
FORMAT_PATHS = Package.swift Sources Plugins Tests Benchmarks Fuzz
FUZZ_SECONDS ?= 300
FUZZ_CI_SECONDS ?= 20

.PHONY: run test deps-run deps-test build lint bench fuzz clean

run: deps-run
	$(SWIFT) build -c release --product netres
	.build/release/netres watch $(ARGS)

test: deps-test lint
	$(SWIFT) build --build-tests
	$(SWIFT) test
	SWIFT=$(SWIFT) scripts/fuzz.sh $(FUZZ_CI_SECONDS)

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

clean:
	rm -rf .build .build-fuzz
