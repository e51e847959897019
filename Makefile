# Puff: build, test, demo, bench, install.
#
# The PAM module and the setuid helper are built in Embedded Swift (`make module`, `make
# helper`): no Swift runtime, no runtime metadata, no environment read at start-up, a few
# hundred KB. swiftc compiles the same sources SwiftPM uses, one module at a time, in
# .build-embedded; the CLI, the pad, the tests and the fuzzers stay on the full runtime. The
# module gets a version script, so the host process (sshd, sudo, login...) sees only the
# pam_sm_* symbols.

PREFIX      ?= /usr/local
DESTDIR     ?=
MULTIARCH   := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
PAMDIR      ?= /usr/lib/$(MULTIARCH)/security
BINDIR      ?= $(PREFIX)/sbin
USERBINDIR  ?= $(PREFIX)/bin
SWIFT       ?= swift
SWIFTC      ?= swiftc
DEBIAN_DEPS := libpam0g-dev libsodium-dev libstb-dev pamtester libpam-modules libpam-modules-bin strace valgrind \
	openssh-server openssh-client sshpass libchafa-dev libglib2.0-dev tmux openssl

# Embedded Swift. Embedded/Glibc stands in for the Glibc overlay Embedded Swift lacks, so the
# shared sources say `import Glibc` in both builds. Strings need the toolchain's Unicode tables,
# floating point needs libm. Every function gets its own section and the linker drops the ones
# nothing reaches (PuffCore and PuffPlatform also serve the CLI).
EMBEDDED        := .build-embedded
EMBEDDED_TARGET := x86_64-unknown-linux-gnu
EMBEDDED_LIBDIR := $(shell d=$$(dirname "$$(readlink -f "$$(command -v $(SWIFTC))")"); echo "$$d/../lib/swift/embedded/$(EMBEDDED_TARGET)")
EMBEDDED_FLAGS  := -enable-experimental-feature Embedded -target $(EMBEDDED_TARGET) -wmo -Osize \
	-Xfrontend -function-sections -I $(EMBEDDED) -I Embedded/Glibc/CGlibc -I Sources/CSodium -I Sources/CPAM
EMBEDDED_LINK   := -L$(EMBEDDED_LIBDIR) -lswiftUnicodeDataTables -lm -lsodium -lpam -Xlinker --gc-sections \
	-Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro -Xlinker --build-id
CORE_SOURCES     := $(shell find Sources/PuffCore -name '*.swift' | sort)
PLATFORM_SOURCES := $(shell find Sources/PuffPlatform -name '*.swift' | sort)
PAM_SOURCES      := $(shell find Sources/PuffPAM -name '*.swift' | sort)
HELPER_SOURCES   := $(shell find Sources/puff-check -name '*.swift' ! -name main.swift | sort)

FUZZ_SECONDS ?= 60

.PHONY: all build deps module cli helper test demo bench race fuzz killsweep faults valgrind timing tsan install uninstall clean

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

module: deps build/pam_puff.so

$(EMBEDDED)/Glibc.o: Embedded/Glibc/Glibc.swift Embedded/Glibc/CGlibc/shim.h Embedded/Glibc/CGlibc/module.modulemap
	mkdir -p $(EMBEDDED)
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name Glibc -emit-module -emit-module-path $(EMBEDDED)/Glibc.swiftmodule \
		-c Embedded/Glibc/Glibc.swift -o $@

$(EMBEDDED)/PuffCore.o: $(CORE_SOURCES) $(EMBEDDED)/Glibc.o
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name PuffCore -emit-module -emit-module-path $(EMBEDDED)/PuffCore.swiftmodule \
		-c $(CORE_SOURCES) -o $@

$(EMBEDDED)/PuffPlatform.o: $(PLATFORM_SOURCES) Sources/CSodium/shim.h $(EMBEDDED)/PuffCore.o
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name PuffPlatform -emit-module -emit-module-path $(EMBEDDED)/PuffPlatform.swiftmodule \
		-c $(PLATFORM_SOURCES) -o $@

# NODELETE, kept from the full-runtime build (whose runtime could not be unloaded): pam_end's
# dlclose leaves the module mapped, so a host that authenticates again does not load it again.
build/pam_puff.so: $(PAM_SOURCES) Sources/CPAM/shim.h Sources/PuffPAM/pam_puff.map $(EMBEDDED)/PuffPlatform.o
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name PuffPAM -emit-library -o $(EMBEDDED)/pam_puff.so \
		$(PAM_SOURCES) $(EMBEDDED)/Glibc.o $(EMBEDDED)/PuffCore.o $(EMBEDDED)/PuffPlatform.o $(EMBEDDED_LINK) \
		-Xlinker --version-script=$(CURDIR)/Sources/PuffPAM/pam_puff.map -Xlinker -z -Xlinker nodelete
	mkdir -p build
	install -m 0644 $(EMBEDDED)/pam_puff.so $@

build/puff-check: $(HELPER_SOURCES) Sources/CPAM/shim.h $(EMBEDDED)/PuffPlatform.o
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name puff_check -o $(EMBEDDED)/puff-check \
		$(HELPER_SOURCES) $(EMBEDDED)/Glibc.o $(EMBEDDED)/PuffCore.o $(EMBEDDED)/PuffPlatform.o $(EMBEDDED_LINK) -Xlinker -pie
	mkdir -p build
	install -m 0755 $(EMBEDDED)/puff-check $@

cli: deps
	$(SWIFT) build -c release --product puff-enroll
	mkdir -p build
	install -m 0755 .build/release/puff-enroll build/puff-enroll
	$(SWIFT) build -c release --product puff-pad
	install -m 0755 .build/release/puff-pad build/puff-pad

# The setuid helper, Embedded Swift like the module (rules above): no Swift runtime to read
# SWIFT_* variables or to load, and no RUNPATH (a setuid binary must not load libraries from a
# toolchain path or from beside itself).
helper: deps build/puff-check

build: module cli helper

# Runs a command so that it cannot change the machine: a private mount namespace with
# copy-on-write /etc, /var/lib and /var/log, and a guard that fails when the machine's
# accounts, /etc/shadow, /etc/pam.d, /etc/puff or /var/lib/puff changed (scripts/hermetic.sh).
HERMETIC := bash $(CURDIR)/scripts/hermetic.sh

# The whole suite: pure logic, platform (temp dirs), and integration through real libpam
# against build/pam_puff.so and the debug puff-enroll/harness binaries, in the private /etc.
test: module helper
	$(SWIFT) build --build-tests
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_HELPER=$(CURDIR)/build/puff-check \
		PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(HERMETIC) --label test -- $(SWIFT) test --skip-build --disable-xctest

demo: build
	bash scripts/demo.sh

# Figures, not tests (scripts/bench.sh): what loading the module costs a host next to pam_unix,
# pam_faillock and pam_permit, whole-process pamtester runs, the helper, environment reads.
bench: build timing
	cc -O2 -Wall -o build/puff-loadprobe Tests/Bench/loadprobe.c -Wl,--no-as-needed -lpam -ldl
	cc -O2 -Wall -o build/puff-spawnprobe Tests/Bench/spawnprobe.c
	$(SWIFT) build -c release --product gesture-bench
	$(HERMETIC) --label bench -- bash scripts/bench.sh
	.build/release/gesture-bench

# Simultaneous attempts on one user through Puff and pam_faillock, counted side by side.
race: module
	$(SWIFT) build --product puff-race
	$(SWIFT) build --product puff-enroll
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label race -- bash scripts/race.sh

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
		$(HERMETIC) --label killsweep -- bash scripts/killsweep.sh

# ENOSPC/EIO/EACCES injected into one system call at a time: never a success, nothing lost.
# FAULT_ITERATIONS bounds the runs (empty: all of them).
FAULT_ITERATIONS ?=
faults: module
	$(SWIFT) build --product puff-pam-harness
	$(SWIFT) build --product puff-enroll
	FAULT_ITERATIONS=$(FAULT_ITERATIONS) PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(HERMETIC) --label faults -- bash scripts/faults.sh

# memcheck over pamtester and the threaded harness loading build/pam_puff.so (scripts/valgrind.sh).
valgrind: module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label valgrind -- bash scripts/valgrind.sh

# ThreadSanitizer over the threaded harness with a TSan build of the module (scripts/tsan.sh).
tsan: deps
	$(SWIFT) build --product puff-enroll
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) SWIFT=$(SWIFT) $(HERMETIC) --label tsan -- bash scripts/tsan.sh

# Wrong passcode for an enrolled user, an account without a record and no account: medians,
# prompts, rounds and fsyncs side by side (scripts/timing.sh; TIMING_SAMPLES, default 60).
timing: module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label timing -- bash scripts/timing.sh

install: build
	install -d $(DESTDIR)$(PAMDIR) $(DESTDIR)$(BINDIR)
	install -s -m 0644 build/pam_puff.so $(DESTDIR)$(PAMDIR)/pam_puff.so
	install -m 0755 build/puff-enroll $(DESTDIR)$(BINDIR)/puff-enroll
	install -s -m 4755 -o root -g root build/puff-check $(DESTDIR)$(BINDIR)/puff-check
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
	rm -rf build .build .build-embedded .build-fuzz .build-tsan
