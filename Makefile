# Puff: build, test, demo, bench, install.
#
# The PAM module is built in its own scratch directory with the Swift runtime linked
# statically and a version script, so the host process (sshd, sudo, login...) loads no
# libswift* and sees only the pam_sm_* symbols. These flags break `swift test` linking,
# which is why they live here and not in Package.swift.

PREFIX      ?= /usr/local
DESTDIR     ?=
MULTIARCH   := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
PAMDIR      ?= /usr/lib/$(MULTIARCH)/security
BINDIR      ?= $(PREFIX)/sbin
USERBINDIR  ?= $(PREFIX)/bin
SWIFT       ?= swift
DEBIAN_DEPS := libpam0g-dev libsodium-dev libstb-dev pamtester libpam-modules libpam-modules-bin strace valgrind \
	openssh-server openssh-client sshpass libchafa-dev libglib2.0-dev tmux openssl
MODULE_FLAGS := -c release --product PuffPAM --scratch-path .build-module --disable-local-rpath \
	-Xswiftc -static-stdlib \
	-Xlinker --version-script=$(CURDIR)/Sources/PuffPAM/pam_puff.map \
	-Xlinker -z -Xlinker nodelete -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro

FUZZ_SECONDS ?= 60

.PHONY: all build deps module cli helper test demo bench gesture-eval race fuzz killsweep faults valgrind timing tsan install uninstall clean

all: build

# Installs the Debian packages the build and the tests need, when any is missing. A temporary
# policy-rc.d keeps the installation from starting services (the ssh server of openssh-server:
# the tests run their own sshd on 127.0.0.1).
deps:
	@missing=""; for p in $(DEBIAN_DEPS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		guard=""; if [ ! -e /usr/sbin/policy-rc.d ]; then \
			printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && guard=1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; status=$$?; \
		if [ -n "$$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
		exit $$status; \
	fi

module: deps
	$(SWIFT) build $(MODULE_FLAGS)
	mkdir -p build
	install -m 0644 .build-module/release/libPuffPAM.so build/pam_puff.so

cli: deps
	$(SWIFT) build -c release --product puff-enroll
	mkdir -p build
	install -m 0755 .build/release/puff-enroll build/puff-enroll
	$(SWIFT) build -c release --product puff-pad
	install -m 0755 .build/release/puff-pad build/puff-pad

# The setuid helper: release, Swift runtime linked in and no RUNPATH (a setuid binary must
# not load libraries from a toolchain path or from beside itself), in its own scratch directory.
helper: deps
	$(SWIFT) build -c release --product puff-check --static-swift-stdlib --disable-local-rpath --scratch-path .build-helper
	mkdir -p build
	install -m 0755 .build-helper/release/puff-check build/puff-check

build: module cli helper

# The whole suite: pure logic, platform (temp dirs), and integration through real libpam
# against build/pam_puff.so and the debug puff-enroll/harness binaries.
test: module helper
	$(SWIFT) build --build-tests
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_HELPER=$(CURDIR)/build/puff-check \
		PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(SWIFT) test --skip-build --disable-xctest

demo: build
	bash scripts/demo.sh

bench: build timing
	$(SWIFT) build -c release --product gesture-bench
	bash scripts/bench.sh
	.build/release/gesture-bench

# The workload table of issue 13 (simulated genuine users and attackers, baseline and
# version-2 matcher), an ROC curve in build/gesture-roc.svg, and a smaller replay of the same
# attempts through libpam and build/pam_puff.so (scripts/gesture-eval.sh). Figures, not a test.
gesture-eval: module
	$(SWIFT) build -c release --product gesture-eval
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/gesture-eval.sh

# Simultaneous attempts on one user through Puff and pam_faillock, counted side by side.
race: module
	$(SWIFT) build --product puff-race
	$(SWIFT) build --product puff-enroll
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/race.sh

# libFuzzer campaigns with AddressSanitizer: every target in Sources/Fuzz for FUZZ_SECONDS
# seconds each, from the seed corpus in Fuzz/corpus; fails when one crashes.
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) bash scripts/fuzz.sh

# SIGKILL at every openat/flock/write/pwrite64/fsync/renameat of a login or an enrollment,
# then random-time kill -9; checks that no file is torn, lost or rolled back.
KILL_ITERATIONS ?= 1000
killsweep: module
	$(SWIFT) build --product puff-pam-harness
	$(SWIFT) build --product puff-enroll
	KILL_ITERATIONS=$(KILL_ITERATIONS) PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		bash scripts/killsweep.sh

# ENOSPC/EIO/EACCES injected into one system call at a time: never a success, nothing lost.
# FAULT_ITERATIONS bounds the runs (empty: all of them).
FAULT_ITERATIONS ?=
faults: module
	$(SWIFT) build --product puff-pam-harness
	$(SWIFT) build --product puff-enroll
	FAULT_ITERATIONS=$(FAULT_ITERATIONS) PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		bash scripts/faults.sh

# memcheck over pamtester and the threaded harness loading build/pam_puff.so (scripts/valgrind.sh).
valgrind: module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/valgrind.sh

# ThreadSanitizer over the threaded harness with a TSan build of the module (scripts/tsan.sh).
tsan: deps
	$(SWIFT) build --product puff-enroll
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) SWIFT=$(SWIFT) bash scripts/tsan.sh

# Wrong passcode for an enrolled user, an account without a record and no account: medians,
# prompts, rounds and fsyncs side by side (scripts/timing.sh; TIMING_SAMPLES, default 60).
timing: module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/timing.sh

install: build
	install -d $(DESTDIR)$(PAMDIR) $(DESTDIR)$(BINDIR)
	install -m 0644 build/pam_puff.so $(DESTDIR)$(PAMDIR)/pam_puff.so
	install -m 0755 build/puff-enroll $(DESTDIR)$(BINDIR)/puff-enroll
	install -m 4755 -o root -g root build/puff-check $(DESTDIR)$(BINDIR)/puff-check
	install -d $(DESTDIR)$(USERBINDIR)
	install -m 0755 build/puff-pad $(DESTDIR)$(USERBINDIR)/puff-pad
	install -d $(DESTDIR)/etc/pam.d
	install -m 0644 pam.d/puff-enroll $(DESTDIR)/etc/pam.d/puff-enroll
	install -d -m 0755 $(DESTDIR)/etc/puff
	install -d -m 0700 $(DESTDIR)/var/lib/puff

uninstall:
	rm -f $(DESTDIR)$(PAMDIR)/pam_puff.so $(DESTDIR)$(BINDIR)/puff-enroll $(DESTDIR)$(BINDIR)/puff-check \
		$(DESTDIR)/etc/pam.d/puff-enroll $(DESTDIR)$(USERBINDIR)/puff-pad

clean:
	rm -rf build .build .build-module .build-fuzz .build-tsan .build-helper
