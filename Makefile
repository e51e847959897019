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
LIBDIR      ?= $(PREFIX)/lib/$(MULTIARCH)
# Fleet mode's LDAP client (puff_ldap.c with libldap), loaded by the module and the helper only
# when `backend = ldap` is set; `ldap_library` in puff.conf overrides the path.
LDAP_LIBRARY := $(LIBDIR)/puff/puff-ldap.so
# Tpm mode's TPM client (puff_tpm.c with libtss2), loaded by the helper only when the store's key
# is sealed in the TPM; installed beside puff-ldap.so (`tpm_library` in puff.conf overrides it).
TPM_LIBRARY := $(LIBDIR)/puff/puff-tpm.so
SWIFT       ?= swift
SWIFTC      ?= swiftc

# Embedded Swift. The targets, their sources and their dependencies are Package.swift's
# (scripts/embedded-graph.py writes them to $(EMBEDDED)/graph.mk); what follows is only what
# Embedded Swift cannot take from SwiftPM. The helper's Strings need the toolchain's Unicode
# tables; the module's do not (MODULE_LINK, below).
# The one libm function reached (ceil, for Dictionary and Set) is Embedded/Glibc/ceil.c, so
# neither binary needs libm; --as-needed keeps only the libraries a binary calls (the helper
# opens libpam itself when it first needs it, and calls nothing of libaudit). No autolinking:
# the C modules' `link` lines would name their libraries ahead of --as-needed; EMBEDDED_LINK
# lists every library instead, through -Xlinker (swiftc puts its own -l ahead of all -Xlinker). Every function
# gets its own section and the linker drops the ones nothing reaches (PuffCore and
# PuffPlatform also serve the CLI).
# For size (docs/dev/embedded-swift.md): the Swift modules are compiled to LLVM bitcode and
# optimised together at the link (-lto=llvm-full, the toolchain's lld), where LLVM's machine
# outliner shares repeated instruction sequences; lld folds identical functions (--icf=safe:
# only those whose address nobody takes) and packs relative relocations (DT_RELR, glibc >= 2.36).
EMBEDDED        := .build-embedded
EMBEDDED_TARGET := x86_64-unknown-linux-gnu
EMBEDDED_LIBDIR := $(shell d=$$(dirname "$$(readlink -f "$$(command -v $(SWIFTC))")"); echo "$$d/../lib/swift/embedded/$(EMBEDDED_TARGET)")
# Embedded Swift has no Glibc overlay: Embedded/Glibc stands in, so the shared sources say
# `import Glibc` in both builds.
EMBEDDED_FLAGS  := -enable-experimental-feature Embedded -target $(EMBEDDED_TARGET) -wmo -Osize -lto=llvm-full -package-name Puff \
	-Xfrontend -function-sections -Xfrontend -disable-all-autolinking -I $(EMBEDDED)/Glibc -I Embedded/Glibc/CGlibc
EMBEDDED_LINK   := -L$(EMBEDDED_LIBDIR) -Xlinker --as-needed -Xlinker -lsodium -Xlinker -lpam -Xlinker -laudit -use-ld=lld -Xlinker --gc-sections \
	-Xlinker --icf=safe -Xlinker -mllvm -Xlinker -enable-machine-outliner=always -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro -Xlinker --build-id
# The module compares, matches and cuts text as UTF-8 bytes (Sources/PuffCore/ByteText.swift), so
# it needs none of the standard library's Unicode tables: it is linked without them and with
# `-z defs`, and a String operation that needs normalization or grapheme breaking (`==` or a
# `switch` on Strings, String keys of a Set or Dictionary, `split` or `dropLast` by Character)
# fails its link with an undefined `_swift_stdlib_*` symbol instead of adding ~50 KB to it. The
# helper still uses them (enrollment's String sets, among others).
MODULE_LINK     := -Xlinker -z -Xlinker defs
HELPER_LINK     := -lswiftUnicodeDataTables
# Each C function and datum in its own section too, so the link drops those nothing reaches.
EMBEDDED_CFLAGS := -O2 -fPIC -Wall -ffunction-sections -fdata-sections
# The two Embedded binaries, whose targets and dependencies graph.mk lists.
EMBEDDED_ROOTS  := PuffPAM puff-check
PYTHON      ?= /usr/bin/python3
VERSION     := $(shell cat $(CURDIR)/VERSION)
# The release, the helper's and the LDAP and TPM clients' install paths, compiled in
# (Sources/CPuffBuild): for cc as they are, for swift build after -Xcc.
BUILD_DEFINES := -DPUFF_VERSION='"$(VERSION)"' -DPUFF_SBINDIR='"$(BINDIR)"' -DPUFF_LDAP_LIBRARY='"$(LDAP_LIBRARY)"' \
	-DPUFF_TPM_LIBRARY='"$(TPM_LIBRARY)"'
# The Debian packages each target needs, installed when missing (scripts/install-packages.sh,
# which leaves every service they ship stopped and disabled at boot). `make demo` needs only a
# compiler and the libraries of the module and puff-enroll: no server, no X.
DEMO_DEPS   := gcc libc6-dev python3 libpam0g-dev libsodium-dev libaudit-dev libldap2-dev libtss2-dev
# `make build`: also the pictures (stb), the terminal pad (chafa), the lock screen (X11, cairo),
# the greeter's library (not the LightDM daemon) and the man pages.
BUILD_DEPS  := $(DEMO_DEPS) pkg-config libstb-dev libchafa-dev libglib2.0-dev libx11-dev libxi-dev libxrandr-dev libcairo2-dev \
	liblightdm-gobject-dev scdoc libwayland-dev wayland-protocols libxkbcommon-dev
# `make test`: the servers and tools the suite starts itself (sshd, slapd, swtpm, Xvfb, LightDM
# in test mode, Xephyr, cage for the greetd greeter, with the Xwayland it insists on), none of them enabled; fail2ban-regex reads the log lines of real logins
# with the shipped filter (docs/fail2ban).
TEST_DEPS   := $(BUILD_DEPS) pamtester libpam-modules libpam-modules-bin strace openssh-server openssh-client sshpass tmux \
	openssl slapd ldap-utils swtpm swtpm-tools tpm2-tools fonts-dejavu-core xvfb xdotool imagemagick x11-apps x11-utils \
	x11-xserver-utils xinput lightdm xserver-xephyr dbus-daemon \
	fail2ban python3-venv grim cage xwayland
# The campaigns (killsweep, faults, timing, login-syscalls, bench): tracing, the TPM simulator,
# an ssh server for the timing through sshd.
CAMPAIGN_DEPS := $(DEMO_DEPS) pamtester strace swtpm swtpm-tools tpm2-tools openssh-server openssh-client
VALGRIND_DEPS := $(DEMO_DEPS) pamtester valgrind
# The login keyring's tests (KeyringTests): the real gnome-keyring-daemon, installed without
# its recommends, because libpam-gnome-keyring's postinst runs pam-auth-update on the machine's
# /etc/pam.d. Its PAM module is unpacked into build/keyring instead (`apt-get download`, `dpkg -x`).
KEYRING_DEPS := gnome-keyring
GNOME_KEYRING_PAM := build/keyring/lib/$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/security/pam_gnome_keyring.so
# What `make deb` and `make deb-test` need besides BUILD_DEPS.
DEB_DEPS    := debhelper fakeroot dpkg-dev lintian man-db
ARCH        := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB         := build/libpam-puff_$(VERSION)_$(ARCH).deb
LOCKER_DEB  := build/puff-lock_$(VERSION)_$(ARCH).deb
GREETER_DEB := build/puff-greeter_$(VERSION)_$(ARCH).deb
MANDIR      ?= $(PREFIX)/share/man
SHAREDIR    ?= $(PREFIX)/share
HARDEN_LINK := -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro

FUZZ_SECONDS ?= 60

.PHONY: gesture-real all build deps demo-deps test-deps campaign-deps valgrind-deps wayland-protocol wayland-test-env greetd-test-env module ldap-library cli helper locker greeter man completions test demo bench login-syscalls gesture-eval race fuzz killsweep faults valgrind timing tsan \
	install install-files install-locker-files install-greeter-files install-packages uninstall deb deb-test clean

all: build

# Install the Debian packages a target needs, when any is missing (after `apt-get update`), with
# no service started now or enabled for the next boot (scripts/install-packages.sh).
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(BUILD_DEPS)"
	@$(MAKE) --no-print-directory wayland-protocol
demo-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEMO_DEPS)"
test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(TEST_DEPS)"
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(KEYRING_DEPS)" APT_OPTIONS=--no-install-recommends
campaign-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(CAMPAIGN_DEPS)"
valgrind-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(VALGRIND_DEPS)"

# puff-lock's Wayland client code, generated from wayland-protocols' XML by wayland-scanner
# (Sources/CLockWayland/wayland.c includes it when present; without it, Wayland is refused).
WAYLAND_PROTOCOLS := $(shell pkg-config --variable=pkgdatadir wayland-protocols 2>/dev/null || echo /usr/share/wayland-protocols)
# puff-greeter's window under cage is an xdg-shell toplevel, drawn by the same code.
SESSION_LOCK_XML  := $(WAYLAND_PROTOCOLS)/staging/ext-session-lock/ext-session-lock-v1.xml
XDG_SHELL_XML     := $(WAYLAND_PROTOCOLS)/stable/xdg-shell/xdg-shell.xml
WAYLAND_GENERATED := Sources/CLockWayland/generated
wayland-protocol: $(foreach p,ext-session-lock-v1 xdg-shell,$(WAYLAND_GENERATED)/$(p)-client.h $(WAYLAND_GENERATED)/$(p)-code.h)
$(WAYLAND_GENERATED)/ext-session-lock-v1-%.h: $(SESSION_LOCK_XML)
	mkdir -p $(WAYLAND_GENERATED)
	wayland-scanner $(if $(filter client,$*),client-header,private-code) $< $@
$(WAYLAND_GENERATED)/xdg-shell-%.h: $(XDG_SHELL_XML)
	mkdir -p $(WAYLAND_GENERATED)
	wayland-scanner $(if $(filter client,$*),client-header,private-code) $< $@

install-packages:
	@APT_OPTIONS="$(APT_OPTIONS)" bash scripts/install-packages.sh $(PACKAGES)

# pam_gnome_keyring.so for the tests, unpacked, never installed (see KEYRING_DEPS).
$(GNOME_KEYRING_PAM):
	rm -rf build/keyring && mkdir -p build/keyring/deb
	cd build/keyring/deb && apt-get download libpam-gnome-keyring
	dpkg -x build/keyring/deb/libpam-gnome-keyring_*.deb build/keyring
	test -f $@

module: demo-deps build/pam_puff.so build/puff-ldap.so build/puff-tpm.so

# The graph, as SwiftPM reads Package.swift; a directory's time changes when a file in it is
# added or removed. A scratch path of its own: `describe` builds nothing and waits for no build.
-include $(EMBEDDED)/graph.mk
$(EMBEDDED)/graph.mk: Package.swift scripts/embedded-graph.py $(shell find Sources -type d)
	@mkdir -p $(EMBEDDED) && bash scripts/install-packages.sh python3
	$(SWIFT) package --scratch-path $(EMBEDDED)/describe describe --type json > $@.json
	$(PYTHON) scripts/embedded-graph.py $(EMBEDDED)/graph $(EMBEDDED_ROOTS) < $@.json > $@.tmp && mv $@.tmp $@

# What differs from SwiftPM's build, each for its reason:
# the full runtime's entry point; the Embedded helper's is the C `main` in Entry.swift.
puff-check.sources := $(filter-out %/main.swift,$(puff-check.sources))
# CModuleStart hides SWIFT_* from a full runtime starting in a setuid host; this one has none.
CModuleStart.sources :=
# The module and the helper link loaders (Embedded/Loader) that open puff-ldap.so and
# puff-tpm.so when `backend = ldap` or a sealed key first needs them, not libldap and libtss2.
CLDAP.sources := $(CLDAP.sources:%/puff_ldap.c=%/puff_ldap_loader.c)
CTPM.sources  := $(CTPM.sources:%/puff_tpm.c=%/puff_tpm_loader.c)

# What a target of the graph is compiled against: the directory of each Swift module it
# depends on (one module a directory, so it can import nothing else) and its C headers.
embedded-imports = $(foreach t,$($(1).swift),-I $(EMBEDDED)/$(t)) $(foreach t,$($(1).c),-I $($(t).include))
embedded-inputs = $($(1).sources) $(foreach t,$($(1).swift),$(EMBEDDED)/$(t).o) $(foreach t,$($(1).c),$($(t).headers)) \
	$(EMBEDDED)/Glibc/Glibc.o $(EMBEDDED)/graph/$(1)
# What a binary links: its targets' LLVM bitcode and C objects.
embedded-objects = $(EMBEDDED)/Glibc/Glibc.o $(foreach t,$($(1).swift),$(EMBEDDED)/$(t).o) \
	$(patsubst Sources/%.c,$(EMBEDDED)/c/%.o,$(foreach t,$($(1).c),$($(t).sources))) $(EMBEDDED)/ceil.o

# Stamps of the flags that change only when the flags do: a change rebuilds what they build.
quote = '$(subst ','\'',$(1))'
$(EMBEDDED)/flags: FORCE
	@mkdir -p $(EMBEDDED)
	@printf '%s\n' $(call quote,$(EMBEDDED_FLAGS) $(EMBEDDED_LINK) $(MODULE_LINK) $(HELPER_LINK)) | cmp -s - $@ \
		|| printf '%s\n' $(call quote,$(EMBEDDED_FLAGS) $(EMBEDDED_LINK) $(MODULE_LINK) $(HELPER_LINK)) > $@
# The C flags and BUILD_DEFINES (a package build passes PREFIX=/usr).
$(EMBEDDED)/c-flags: FORCE
	@mkdir -p $(EMBEDDED)
	@printf '%s\n' $(call quote,$(EMBEDDED_CFLAGS) $(BUILD_DEFINES)) | cmp -s - $@ \
		|| printf '%s\n' $(call quote,$(EMBEDDED_CFLAGS) $(BUILD_DEFINES)) > $@

FORCE:

$(EMBEDDED)/Glibc/Glibc.o: Embedded/Glibc/Glibc.swift Embedded/Glibc/CGlibc/shim.h Embedded/Glibc/CGlibc/module.modulemap $(EMBEDDED)/flags
	@mkdir -p $(@D)
	$(SWIFTC) $(EMBEDDED_FLAGS) -parse-as-library -module-name Glibc -emit-module -emit-module-path $(@D)/Glibc.swiftmodule -c $< -o $@

$(EMBEDDED)/ceil.o: Embedded/Glibc/ceil.c $(EMBEDDED)/c-flags
	cc $(EMBEDDED_CFLAGS) -fno-builtin -c $< -o $@

.SECONDEXPANSION:

# A Swift target: LLVM bitcode for the link, and its .swiftmodule alone in its directory.
$(EMBEDDED_SWIFT:%=$(EMBEDDED)/%.o): $(EMBEDDED)/%.o: $$(call embedded-inputs,$$*)
	@mkdir -p $(EMBEDDED)/$*
	$(SWIFTC) $(EMBEDDED_FLAGS) $(call embedded-imports,$*) -parse-as-library -module-name $($*.module) -emit-module \
		-emit-module-path $(EMBEDDED)/$*/$($*.module).swiftmodule -c $($*.sources) -o $@

# A C target's file, with its target's headers (and Embedded/Loader's, for the loaders).
$(EMBEDDED)/c/%.o: Sources/%.c $(EMBEDDED)/c-flags
	@mkdir -p $(@D)
	cc $(EMBEDDED_CFLAGS) -MMD -MP $(BUILD_DEFINES) -I $($(firstword $(subst /, ,$*)).include) -I Embedded/Loader -c $< -o $@
-include $(wildcard $(EMBEDDED)/c/*/*.d)

# The real clients the loaders open: hidden visibility but for their entry points, and
# -Bsymbolic, so nothing of them binds to the host's symbols.
build/puff-tpm.so: Sources/CTPM/puff_tpm.c Sources/CTPM/include/puff_tpm.h
	mkdir -p build
	cc -O2 -fPIC -Wall -fvisibility=hidden -shared -I Sources/CTPM/include $< -o $@ \
		-Wl,-Bsymbolic -Wl,-z,now -Wl,-z,relro -Wl,--as-needed -ltss2-esys -ltss2-tctildr -ltss2-rc
	chmod 0644 $@

ldap-library: demo-deps build/puff-ldap.so

build/puff-ldap.so: Sources/CLDAP/puff_ldap.c Sources/CLDAP/include/puff_ldap.h
	mkdir -p build
	cc -O2 -fPIC -Wall -fvisibility=hidden -shared -I Sources/CLDAP/include $< -o $@ \
		-Wl,-Bsymbolic -Wl,-z,now -Wl,-z,relro -Wl,--as-needed -lldap -llber
	chmod 0644 $@

# NODELETE, kept from the full-runtime build (whose runtime could not be unloaded): pam_end's
# dlclose leaves the module mapped, so a host that authenticates again does not load it again.
# The module has no TPM code (libtss2 reads TSS2_LOGFILE from the environment, which in su is
# the user's): tpm mode goes through the helper, and a graph that gives it PuffTPM fails here.
build/pam_puff.so: $(call embedded-inputs,PuffPAM) $(call embedded-objects,PuffPAM) Sources/PuffPAM/pam_puff.map
	$(if $(filter PuffTPM CTPM,$(PuffPAM.swift) $(PuffPAM.c)),$(error Package.swift gives PuffPAM tpm mode's code: $(PuffPAM.swift) $(PuffPAM.c)))
	$(SWIFTC) $(EMBEDDED_FLAGS) $(call embedded-imports,PuffPAM) -parse-as-library -module-name $(PuffPAM.module) \
		-emit-library -o $(EMBEDDED)/pam_puff.so $(PuffPAM.sources) $(call embedded-objects,PuffPAM) $(EMBEDDED_LINK) $(MODULE_LINK) \
		-Xlinker --version-script=$(CURDIR)/Sources/PuffPAM/pam_puff.map -Xlinker -z -Xlinker nodelete
	mkdir -p build
	install -m 0644 $(EMBEDDED)/pam_puff.so $@

build/puff-check: $(call embedded-inputs,puff-check) $(call embedded-objects,puff-check)
	$(SWIFTC) $(EMBEDDED_FLAGS) $(call embedded-imports,puff-check) -parse-as-library -module-name $(puff-check.module) \
		-o $(EMBEDDED)/puff-check $(puff-check.sources) $(call embedded-objects,puff-check) $(HELPER_LINK) $(EMBEDDED_LINK) -Xlinker -pie
	mkdir -p build
	install -m 0755 $(EMBEDDED)/puff-check $@

# The tools: Swift runtime linked in and no RUNPATH, so they run where no toolchain is installed.
CLI_FLAGS := -c release --static-swift-stdlib --disable-local-rpath --scratch-path .build-cli $(addprefix -Xcc ,$(BUILD_DEFINES)) $(HARDEN_LINK)
cli: deps
	$(SWIFT) build $(CLI_FLAGS) --product puff-enroll
	mkdir -p build
	install -m 0755 .build-cli/release/puff-enroll build/puff-enroll
	$(SWIFT) build $(CLI_FLAGS) --product puff-pad
	install -m 0755 .build-cli/release/puff-pad build/puff-pad
	$(SWIFT) build $(CLI_FLAGS) --product puff-lock
	install -m 0755 .build-cli/release/puff-lock build/puff-lock
	$(SWIFT) build $(CLI_FLAGS) --product puff-greeter
	install -m 0755 .build-cli/release/puff-greeter build/puff-greeter

# The setuid helper, Embedded Swift like the module (rules above): no Swift runtime to read
# SWIFT_* variables or to load, and no RUNPATH (a setuid binary must not load libraries from a
# toolchain path or from beside itself).
helper: demo-deps build/puff-check build/puff-ldap.so build/puff-tpm.so

build: module cli helper

# The X11 screen locker alone (`make cli` builds it with the other tools).
locker: deps
	$(SWIFT) build $(CLI_FLAGS) --product puff-lock
	mkdir -p build
	install -m 0755 .build-cli/release/puff-lock build/puff-lock

# The LightDM greeter alone (`make cli` builds it with the other tools).
greeter: deps
	$(SWIFT) build $(CLI_FLAGS) --product puff-greeter
	mkdir -p build
	install -m 0755 .build-cli/release/puff-greeter build/puff-greeter

# Man pages from docs/man/*.scd (scdoc).
MANPAGES := pam_puff.8 puff.conf.5 puff-enroll.8 puff-check.8 puff-pad.1
LOCKER_MANPAGES := puff-lock.1
GREETER_MANPAGES := puff-greeter.8
man: deps
	mkdir -p build/man
	for page in $(MANPAGES) $(LOCKER_MANPAGES) $(GREETER_MANPAGES); do scdoc < docs/man/$$page.scd > build/man/$$page || exit 1; done

# Shell completions, generated by swift-argument-parser from the built tools.
completions: cli
	mkdir -p build/completions
	for tool in puff-enroll puff-pad puff-lock; do \
		build/$$tool --generate-completion-script bash | sed '1{/^#!/d}' > build/completions/$$tool.bash && \
		build/$$tool --generate-completion-script zsh > build/completions/_$$tool && \
		build/$$tool --generate-completion-script fish > build/completions/$$tool.fish || exit 1; \
	done

# Runs a command so that it cannot change the machine: a private mount namespace with
# copy-on-write /etc, /var/lib and /var/log, and a guard that fails when the machine's
# accounts, /etc/shadow, /etc/pam.d, /etc/puff or /var/lib/puff changed (scripts/hermetic.sh).
HERMETIC := bash $(CURDIR)/scripts/hermetic.sh
# The suite takes 2–5 minutes; one still running after this was hung (the hermetic wrapper
# then prints what was running and fails with 124).
TEST_TIME_LIMIT ?= 1200

# The test compositor's Python (Tests/Wayland/lock-compositor.py): pywlroots 0.17.0 bundles
# wlroots 0.17 with ext-session-lock-v1 and a headless backend (Debian 12's compositors lack
# the protocol); pywayland 0.4.17 is the one its bindings were built against.
WAYLAND_VENV := build/wayland-venv
wayland-test-env: $(WAYLAND_VENV)/.ready
$(WAYLAND_VENV)/.ready:
	/usr/bin/python3 -m venv $(WAYLAND_VENV)
	$(WAYLAND_VENV)/bin/pip install --quiet --disable-pip-version-check pywlroots==0.17.0 pywayland==0.4.17
	touch $@

# Debian 12's greetd 0.9, unpacked (never installed: its postinst adds an account and a PAM
# service) for GreetdGreeterTests, which run it in a namespace of their own.
GREETD_DIR := build/greetd
greetd-test-env: $(GREETD_DIR)/usr/sbin/greetd
$(GREETD_DIR)/usr/sbin/greetd:
	mkdir -p $(GREETD_DIR)/deb
	cd $(GREETD_DIR)/deb && rm -f greetd_*.deb && apt-get download greetd
	dpkg -x $(GREETD_DIR)/deb/greetd_*.deb $(GREETD_DIR)
	touch $@

# The whole suite: pure logic, platform (temp dirs), and integration through real libpam
# against build/pam_puff.so and the debug puff-enroll/harness binaries, in the private /etc.
test: test-deps wayland-protocol module helper man $(GNOME_KEYRING_PAM) wayland-test-env greetd-test-env
	mkdir -p build
	cc -O2 -fno-builtin -Wall -o build/ceil-test Tests/Embedded/ceil-test.c -lm && build/ceil-test
	$(SWIFT) build --build-tests
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_HELPER=$(CURDIR)/build/puff-check \
		PUFF_LDAP_LIBRARY=$(CURDIR)/build/puff-ldap.so PUFF_TPM_LIBRARY=$(CURDIR)/build/puff-tpm.so \
		PUFF_GNOME_KEYRING_PAM=$(CURDIR)/$(GNOME_KEYRING_PAM) PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(HERMETIC) --label test --time-limit $(TEST_TIME_LIMIT) -- $(SWIFT) test --skip-build --disable-xctest

# The demo builds only what it runs: the module and the debug puff-enroll and PAM harness.
demo: demo-deps build/pam_puff.so
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/demo.sh

# Figures, not tests (scripts/bench.sh): what loading the module costs a host next to pam_unix,
# pam_faillock and pam_permit, whole-process pamtester runs, the helper, environment reads.
bench: campaign-deps build timing
	cc -O2 -Wall -o build/puff-loadprobe Tests/Bench/loadprobe.c -Wl,--no-as-needed -lpam -ldl
	cc -O2 -Wall -o build/puff-spawnprobe Tests/Bench/spawnprobe.c
	cc -O2 -Wall -shared -fPIC -o build/puff-nosync.so Tests/Bench/nosync.c
	$(SWIFT) build -c release --product gesture-bench
	$(HERMETIC) --label bench -- bash scripts/bench.sh
	.build/release/gesture-bench

# The workload table of issue 13 (simulated genuine users and attackers, baseline and
# version-2 matcher), an ROC curve in build/gesture-roc.svg, and a smaller replay of the same
# attempts through libpam and build/pam_puff.so (scripts/gesture-eval.sh). Figures, not a test.
gesture-eval: module
	$(SWIFT) build -c release --product gesture-eval
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/gesture-eval.sh

# Real drawings as the ground truth (issue 35): the $1 unistroke logs beside the repository
# (../shared/data, never copied into it) through the real enroller and matcher, and a replay of
# part of them through puff-enroll and libpam (scripts/gesture-real.sh); with SVC2004=DIR and
# MMG=DIR, signatures from two sessions and multistroke symbols too. Figures, not a test.
gesture-real: module
	$(SWIFT) build -c release --product gesture-eval
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) bash scripts/gesture-real.sh

# One login's file system calls (openat, walks from "/", fsync, renames) for a right passcode,
# a right gesture and a wrong passcode, traced with strace (scripts/login-syscalls.sh; VERBOSE=1
# lists them). Figures, not a test.
login-syscalls: campaign-deps module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label login-syscalls -- bash scripts/login-syscalls.sh

# Simultaneous attempts on one user through Puff and pam_faillock, counted side by side.
race: module
	$(SWIFT) build --product puff-race
	$(SWIFT) build --product puff-enroll
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label race -- bash scripts/race.sh

# libFuzzer campaigns with AddressSanitizer: every target in Sources/Fuzz for FUZZ_SECONDS
# seconds each, from the seed corpus in Fuzz/corpus; fails when one crashes.
fuzz: demo-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT=$(SWIFT) bash scripts/fuzz.sh

# SIGKILL at every openat/flock/write/pwrite64/fsync/renameat of a login or an enrollment,
# then random-time kill -9; checks that no file is torn, lost or rolled back.
KILL_ITERATIONS ?= 1000
# The same campaign in tpm mode (the host key in swtpm), smaller: every login spawns the helper.
KILL_TPM_ITERATIONS ?= 200
killsweep: campaign-deps module helper
	$(SWIFT) build --product puff-pam-harness
	$(SWIFT) build --product puff-enroll
	KILL_ITERATIONS=$(KILL_ITERATIONS) PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(HERMETIC) --label killsweep -- bash scripts/killsweep.sh
	KILL_ITERATIONS=$(KILL_TPM_ITERATIONS) PUFF_SWEEP_TPM=1 PUFF_MODULE=$(CURDIR)/build/pam_puff.so \
		PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label killsweep-tpm -- bash scripts/killsweep.sh

# ENOSPC/EIO/EACCES injected into one system call at a time: never a success, nothing lost.
# FAULT_ITERATIONS bounds the runs (empty: all of them).
FAULT_ITERATIONS ?=
# The same in tpm mode (the host key in swtpm; also connect/sendto/recvfrom to the TPM).
FAULT_TPM_ITERATIONS ?= 300
faults: campaign-deps module helper
	$(SWIFT) build --product puff-pam-harness
	$(SWIFT) build --product puff-enroll
	FAULT_ITERATIONS=$(FAULT_ITERATIONS) PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) \
		$(HERMETIC) --label faults -- bash scripts/faults.sh
	FAULT_ITERATIONS=$(FAULT_TPM_ITERATIONS) PUFF_SWEEP_TPM=1 PUFF_MODULE=$(CURDIR)/build/pam_puff.so \
		PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label faults-tpm -- bash scripts/faults.sh

# memcheck over pamtester and the threaded harness loading build/pam_puff.so (scripts/valgrind.sh).
valgrind: valgrind-deps module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label valgrind -- bash scripts/valgrind.sh

# ThreadSanitizer over the threaded harness with a TSan build of the module (scripts/tsan.sh).
tsan: demo-deps
	$(SWIFT) build --product puff-enroll
	PUFF_BIN=$$($(SWIFT) build --show-bin-path) SWIFT=$(SWIFT) $(HERMETIC) --label tsan -- bash scripts/tsan.sh

# Wrong passcode for an enrolled user, an account without a record and no account: medians,
# prompts, rounds and fsyncs side by side (scripts/timing.sh; TIMING_SAMPLES, default 60).
timing: campaign-deps module
	$(SWIFT) build --product puff-enroll
	$(SWIFT) build --product puff-pam-harness
	PUFF_MODULE=$(CURDIR)/build/pam_puff.so PUFF_BIN=$$($(SWIFT) build --show-bin-path) $(HERMETIC) --label timing -- bash scripts/timing.sh

install: build man completions install-files install-locker-files install-greeter-files
	install -d -m 0755 $(DESTDIR)/etc/puff
	install -d -m 0700 $(DESTDIR)/var/lib/puff
	# Pictures are opened by name: their directory (0711) lists no one (older versions: 0755).
	if [ -d $(DESTDIR)/etc/puff/pictures ]; then chmod go-r $(DESTDIR)/etc/puff/pictures; fi

# Installs what `make build man completions` made (debian/rules calls this with PREFIX=/usr;
# the package's postinst makes /etc/puff and /var/lib/puff, so that purge can remove them).
install-files:
	install -d $(DESTDIR)$(PAMDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(USERBINDIR)
	install -s -m 0644 build/pam_puff.so $(DESTDIR)$(PAMDIR)/pam_puff.so
	install -m 0755 build/puff-enroll $(DESTDIR)$(BINDIR)/puff-enroll
	install -s -m 4755 build/puff-check $(DESTDIR)$(BINDIR)/puff-check
	install -d $(DESTDIR)$(LIBDIR)/puff
	install -s -m 0644 build/puff-ldap.so $(DESTDIR)$(LDAP_LIBRARY)
	install -s -m 0644 build/puff-tpm.so $(DESTDIR)$(TPM_LIBRARY)
	install -m 0755 build/puff-pad $(DESTDIR)$(USERBINDIR)/puff-pad
	install -d $(DESTDIR)/etc/pam.d
	install -m 0644 pam.d/puff-enroll $(DESTDIR)/etc/pam.d/puff-enroll
	install -m 0644 pam.d/puff-pad $(DESTDIR)/etc/pam.d/puff-pad
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	for page in $(MANPAGES); do install -m 0644 build/man/$$page $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done
	install -d $(DESTDIR)$(SHAREDIR)/bash-completion/completions $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions \
		$(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d
	for tool in puff-enroll puff-pad; do \
		install -m 0644 build/completions/$$tool.bash $(DESTDIR)$(SHAREDIR)/bash-completion/completions/$$tool && \
		install -m 0644 build/completions/_$$tool $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_$$tool && \
		install -m 0644 build/completions/$$tool.fish $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/$$tool.fish || exit 1; \
	done
	install -d $(DESTDIR)$(SHAREDIR)/pam-configs
	install -m 0644 debian/pam-configs/puff debian/pam-configs/puff-authsucc $(DESTDIR)$(SHAREDIR)/pam-configs/
	install -d $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples
	install -m 0644 pam.d/puff-else-password pam.d/puff-example pam.d/puff-instead-of-password \
		$(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/
	install -d $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/fail2ban/filter.d $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/fail2ban/jail.d
	install -m 0644 docs/fail2ban/filter.d/puff.conf $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/fail2ban/filter.d/puff.conf
	install -m 0644 docs/fail2ban/jail.d/puff.conf $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/fail2ban/jail.d/puff.conf
	install -m 0644 docs/admin/fleet.md docs/admin/protection-at-rest.md docs/dev/prompt-contract.md docs/dev/gesture-format.md \
		$(DESTDIR)$(SHAREDIR)/doc/libpam-puff/
	install -d $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/ldap
	install -m 0644 ldap/puff.ldif ldap/99puff.ldif $(DESTDIR)$(SHAREDIR)/doc/libpam-puff/examples/ldap/

# The screen locker, its PAM service, man page and completions (debian/rules installs them
# into the puff-lock package, so that servers with the PAM module need no X11 or cairo).
install-locker-files:
	install -d $(DESTDIR)$(USERBINDIR) $(DESTDIR)/etc/pam.d $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(SHAREDIR)/bash-completion/completions $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions \
		$(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d
	install -m 0755 build/puff-lock $(DESTDIR)$(USERBINDIR)/puff-lock
	install -m 0644 pam.d/puff-lock $(DESTDIR)/etc/pam.d/puff-lock
	for page in $(LOCKER_MANPAGES); do install -m 0644 build/man/$$page $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done
	install -m 0644 build/completions/puff-lock.bash $(DESTDIR)$(SHAREDIR)/bash-completion/completions/puff-lock
	install -m 0644 build/completions/_puff-lock $(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_puff-lock
	install -m 0644 build/completions/puff-lock.fish $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/puff-lock.fish

# The LightDM greeter, its entry under /usr/share/xgreeters and its man page (the puff-greeter
# package; no shell completions: LightDM starts it, nobody types its command line). Selecting
# it is the administrator's (greeter-session=puff-greeter) or the package's alternative.
install-greeter-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR)/xgreeters $(DESTDIR)$(MANDIR)/man8
	install -m 0755 build/puff-greeter $(DESTDIR)$(BINDIR)/puff-greeter
	sed 's|@BINDIR@|$(BINDIR)|' data/puff-greeter-cage > $(DESTDIR)$(BINDIR)/puff-greeter-cage
	chmod 0755 $(DESTDIR)$(BINDIR)/puff-greeter-cage
	sed 's|^Exec=puff-greeter|Exec=$(BINDIR)/puff-greeter|' data/puff-greeter.desktop > $(DESTDIR)$(SHAREDIR)/xgreeters/puff-greeter.desktop
	chmod 0644 $(DESTDIR)$(SHAREDIR)/xgreeters/puff-greeter.desktop
	install -d $(DESTDIR)$(SHAREDIR)/doc/puff-greeter/examples
	sed 's|@BINDIR@|$(BINDIR)|' data/greetd-config.toml > $(DESTDIR)$(SHAREDIR)/doc/puff-greeter/examples/greetd-config.toml
	chmod 0644 $(DESTDIR)$(SHAREDIR)/doc/puff-greeter/examples/greetd-config.toml
	for page in $(GREETER_MANPAGES); do install -m 0644 build/man/$$page $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done

# Removes what `make install` put in place; the enrollments and counters stay (say so).
uninstall:
	rm -f $(DESTDIR)$(PAMDIR)/pam_puff.so $(DESTDIR)$(BINDIR)/puff-enroll $(DESTDIR)$(BINDIR)/puff-check \
		$(DESTDIR)$(LDAP_LIBRARY) $(DESTDIR)$(TPM_LIBRARY) \
		$(DESTDIR)$(USERBINDIR)/puff-pad $(DESTDIR)/etc/pam.d/puff-enroll $(DESTDIR)/etc/pam.d/puff-pad \
		$(DESTDIR)$(SHAREDIR)/pam-configs/puff $(DESTDIR)$(SHAREDIR)/pam-configs/puff-authsucc \
		$(DESTDIR)$(USERBINDIR)/puff-lock $(DESTDIR)/etc/pam.d/puff-lock \
		$(DESTDIR)$(BINDIR)/puff-greeter $(DESTDIR)$(BINDIR)/puff-greeter-cage $(DESTDIR)$(SHAREDIR)/xgreeters/puff-greeter.desktop \
		$(DESTDIR)$(SHAREDIR)/doc/puff-greeter/examples/greetd-config.toml
	for page in $(MANPAGES) $(LOCKER_MANPAGES) $(GREETER_MANPAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done
	for tool in puff-enroll puff-pad puff-lock; do rm -f $(DESTDIR)$(SHAREDIR)/bash-completion/completions/$$tool \
		$(DESTDIR)$(SHAREDIR)/zsh/vendor-completions/_$$tool $(DESTDIR)$(SHAREDIR)/fish/vendor_completions.d/$$tool.fish; done
	rm -rf $(DESTDIR)$(SHAREDIR)/doc/libpam-puff
	if [ -d $(DESTDIR)$(LIBDIR)/puff ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(LIBDIR)/puff; fi
	@echo "Left in place: $(DESTDIR)/etc/puff (host key, records, pictures, puff.conf) and"
	@echo "$(DESTDIR)/var/lib/puff (lockout counters). Remove them, and every enrollment, with:"
	@echo "    rm -rf $(DESTDIR)/etc/puff $(DESTDIR)/var/lib/puff"
	@echo "Remove pam_puff.so from every PAM service that names it before the next login."

# build/libpam-puff_<version>_<arch>.deb, build/puff-lock_<version>_<arch>.deb and
# build/puff-greeter_<version>_<arch>.deb with debhelper
# (dpkg-buildpackage, binary only);
# installs debhelper and lintian when missing, and runs lintian on the result.
deb: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_DEPS)"
	rm -rf build/deb && mkdir -p build/deb
	PATH="$$PATH" dpkg-buildpackage -b -us -uc --buildinfo-option=-ubuild/deb --changes-option=-ubuild/deb \
		--buildinfo-file=build/deb/libpam-puff.buildinfo --changes-file=build/deb/libpam-puff.changes
	cp build/deb/libpam-puff_$(VERSION)_$(ARCH).deb $(DEB)
	cp build/deb/puff-lock_$(VERSION)_$(ARCH).deb $(LOCKER_DEB)
	cp build/deb/puff-greeter_$(VERSION)_$(ARCH).deb $(GREETER_DEB)
	lintian --fail-on error $(DEB) $(LOCKER_DEB) $(GREETER_DEB) || \
		{ echo "lintian reported errors"; exit 1; }
	@echo "Built $(DEB), $(LOCKER_DEB) and $(GREETER_DEB)"

# Installs the package in a throwaway overlay copy of / (never on this machine), without the
# Swift toolchain, and logs in through it (scripts/deb-test.sh).
deb-test: test-deps greetd-test-env wayland-test-env deb
	bash scripts/deb-test.sh $(DEB) $(LOCKER_DEB) $(GREETER_DEB) $(wildcard $(GREETD_DIR)/deb/greetd_*.deb)

clean:
	rm -rf build .build .build-embedded .build-cli .build-fuzz .build-tsan
