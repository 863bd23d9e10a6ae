# vmrec: record and replay the memory-management syscalls of applications.
#
#   make            programs and libraries (build/)
#   make static     build/vmreplay-static alone (vmreplay --kernel's guest)
#   make check      build and run every test (unit, end-to-end, fuzz smoke)
#   make demo       build, record the seed-000 workload, replay and lint it
#   make install    PREFIX=/usr/local DESTDIR=  (binaries and man pages)
#   make clean
#   V=1             show full commands        SAN=1  ASan+UBSan build (build-san/)
#
# Missing build dependencies are installed by mk/deps.sh when run as root on
# Debian; otherwise it prints the command to run.

# As many compile jobs as CPUs unless the command line says (-j, -jN).
ifeq ($(filter -j% j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2> /dev/null || echo 2)
endif

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CC ?= cc
CLANG ?= clang
CFLAGS ?= -O2 -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter

ifeq ($(SAN),1)
B ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
B ?= build
SANFLAGS :=
endif

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-8s %s\n'
endif

# Each library sees its own headers and those of the layers below it, so
# that an include the wrong way fails to build (mk/layers.py checks the
# rest: the same order between the objects, no internal header across
# folders, no cycle between files).
#   format (libvmtrace)  <-  analysis  <-  replay, vmtrace;  format <- record
# Inside analysis/ and replay/ (each subfolder's README.md says what it
# holds; replay/replay.h is public to all of replay/, and replay/*.c, the
# command line and the program, sit on top):
#   analysis:  model  <-  stats, lint, rewrite
#   replay:    load  <-  run  <-  report;  vm
# INCLUDES_<dir> is for the objects of <dir>, a folder or a subfolder.
ANALYSIS_INC := -Ianalysis/model -Ianalysis/stats -Ianalysis/lint -Ianalysis/rewrite
INCLUDES_format := -Iformat
INCLUDES_analysis/model := -Iformat -Ianalysis/model
INCLUDES_analysis/stats := -Iformat -Ianalysis/model -Ianalysis/stats
INCLUDES_analysis/lint := -Iformat -Ianalysis/model -Ianalysis/lint
INCLUDES_analysis/rewrite := -Iformat -Ianalysis/model -Ianalysis/rewrite
INCLUDES_record := -Iformat -Irecord
REPLAY_INC := -Iformat $(ANALYSIS_INC) -Ireplay
INCLUDES_replay/load := $(REPLAY_INC) -Ireplay/load
INCLUDES_replay/run := $(REPLAY_INC) -Ireplay/load -Ireplay/run
INCLUDES_replay/report := $(REPLAY_INC) -Ireplay/load -Ireplay/run -Ireplay/report
INCLUDES_replay/vm := $(REPLAY_INC) -Ireplay/vm
REPLAY_PARTS := -Ireplay/load -Ireplay/run -Ireplay/report -Ireplay/vm
INCLUDES_replay := $(REPLAY_INC) $(REPLAY_PARTS)
INCLUDES_vmtrace := -Iformat $(ANALYSIS_INC) -Ivmtrace
# Tests, fuzzers and benches reach into every layer.
INCLUDES_all := -Iformat $(ANALYSIS_INC) -Irecord -Ireplay $(REPLAY_PARTS) -Ivmtrace -Itests/unit
INCLUDES = $(or $(INCLUDES_$(patsubst %/,%,$(dir $(patsubst $(B)/obj/%,%,$@)))),$(INCLUDES_all))
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(INCLUDES) $(WARNINGS) $(CFLAGS) $(SANFLAGS) -pthread -MMD -MP
# Evaluated when a recipe runs, i.e. after $(B)/.deps has installed them.
ZSTD_LIBS = $(shell pkg-config --libs libzstd)
SECCOMP_LIBS = $(shell pkg-config --libs libseccomp)
UNWIND_LIBS = $(shell pkg-config --libs libunwind-ptrace) -lunwind-generic
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)
BPF_LIBS = $(shell pkg-config --libs libbpf)
LDLIBS_ALL = $(ZSTD_LIBS) -liberty -lm -pthread

FORMAT_SRC := $(wildcard format/*.c)
RECORD_SRC := $(filter-out record/vmrec.c,$(wildcard record/*.c))
REPLAY_SRC := $(filter-out replay/vmreplay.c,$(wildcard replay/*.c replay/*/*.c))
ANALYSIS_SRC := $(wildcard analysis/*/*.c)
VMTRACE_SRC := $(filter-out vmtrace/vmtrace.c,$(wildcard vmtrace/*.c))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_HELPERS := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

LIBVMTRACE := $(B)/libvmtrace.a
LIBRECORD := $(B)/libvmrecord.a
LIBREPLAY := $(B)/libvmreplay.a
LIBANALYSIS := $(B)/libvmanalysis.a
LIBCMD := $(B)/libvmtracecmd.a
LIBS := $(LIBCMD) $(LIBREPLAY) $(LIBANALYSIS) $(LIBRECORD) $(LIBVMTRACE)

PROGS := $(B)/vmtrace
ifneq ($(wildcard record/vmrec.c),)
PROGS += $(B)/vmrec
# The inproc backend's runtime, which vmrec puts into the recorded program
# (found beside vmrec, or in $(PREFIX)/lib/vmrec).
RUNTIME := $(B)/vmrec-inproc.rt
endif
ifneq ($(wildcard replay/vmreplay.c),)
PROGS += $(B)/vmreplay
# vmreplay --kernel's guest init: the same vmreplay, linked statically
# (the guest has no libraries) and never sanitized.
STATIC := $(B)/vmreplay-static
endif
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
WORKLOADS := $(patsubst tests/workloads/%.c,$(B)/workloads/%,$(WORKLOAD_SRC))
FUZZ_BIN := $(B)/fuzz/fuzz_reader
FUZZ_REPLAY_BIN := $(B)/fuzz/fuzz_replay
# fuzz_replay's replayer: this build's own vmreplay, unless that one is
# sanitized (see the fuzz_replay rule).
ifeq ($(SAN),1)
FUZZ_PLAIN := $(B)/fuzz/vmreplay-plain
else
FUZZ_PLAIN := $(B)/vmreplay
endif
MANPAGES := $(wildcard man/*.1 man/*.5)

.PHONY: all check unit e2e fuzz fuzz-replay demo install uninstall clean deps bench golden static
.DELETE_ON_ERROR:
.SECONDARY:

all: $(LIBS) $(PROGS) $(RUNTIME) $(STATIC) $(WORKLOADS)

deps: $(B)/.deps
$(B)/.deps: mk/deps.sh mk/kernel.sh
	$(Q)sh mk/deps.sh
	$(Q)mkdir -p $(B) && touch $@

$(B)/obj/%.o: %.c | $(B)/.deps
	$(say) CC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

define lib_rule
$(1): $(call obj,$(2)) | $(B)/.deps
	$$(say) AR $$@
	$(Q)rm -f $$@ && ar rcs $$@ $$(filter %.o,$$^)
endef
$(eval $(call lib_rule,$(LIBVMTRACE),$(FORMAT_SRC)))
$(eval $(call lib_rule,$(LIBRECORD),$(RECORD_SRC)))
$(eval $(call lib_rule,$(LIBREPLAY),$(REPLAY_SRC)))
$(eval $(call lib_rule,$(LIBANALYSIS),$(ANALYSIS_SRC)))
$(eval $(call lib_rule,$(LIBCMD),$(VMTRACE_SRC)))

$(B)/vmtrace: $(call obj,vmtrace/vmtrace.c) $(LIBCMD) $(LIBANALYSIS) $(LIBVMTRACE)
	$(say) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS_ALL)

$(B)/vmrec: $(call obj,record/vmrec.c) $(LIBRECORD) $(LIBVMTRACE)
	$(say) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o %.a,$^) $(SECCOMP_LIBS) $(UNWIND_LIBS) $(BPF_LIBS) $(LDLIBS_ALL)

# The inproc runtime: freestanding (no libc, general registers only),
# linked at its fixed address, never sanitized (it runs in the program).
RT_SRC := $(wildcard record/inproc/rt_*.c)
RT_OBJ := $(patsubst record/inproc/%.c,$(B)/obj/rt/%.o,$(RT_SRC)) $(B)/obj/rt/rt_entry.o
RT_CFLAGS := -std=gnu11 -O2 -g $(WARNINGS) -ffreestanding -fno-builtin -fno-stack-protector \
	-fno-tree-loop-distribute-patterns -mgeneral-regs-only -fPIE -fvisibility=hidden \
	-fno-asynchronous-unwind-tables -fcf-protection=none -MMD -MP
$(B)/obj/rt/%.o: record/inproc/%.c | $(B)/.deps
	$(say) CC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RT_CFLAGS) -c -o $@ $<
$(B)/obj/rt/rt_entry.o: record/inproc/rt_entry.S | $(B)/.deps
	$(say) AS $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -o $@ $<
$(RUNTIME): $(RT_OBJ) record/inproc/rt.ld
	$(say) LINK $@
	$(Q)$(CC) -nostdlib -static -no-pie -Wl,-T,record/inproc/rt.ld -Wl,--build-id=none \
		-Wl,-z,noexecstack -o $@ $(RT_OBJ)

# The stream backend's BPF programs: compiled for the BPF target (CO-RE:
# no kernel headers; libbpf relocates them against the running kernel's
# BTF when vmrec loads them) and embedded in vmrec (record/bpfobj.c).
BPF_OBJ := $(B)/obj/record/stream.bpf.o
$(BPF_OBJ): record/bpf/stream.bpf.c $(wildcard record/bpf/*.h) | $(B)/.deps
	$(say) BPF $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -O2 -g -target bpf -D__TARGET_ARCH_x86 -Irecord/bpf -Wall -Werror \
		-c -o $@ $<
$(call obj,record/bpfobj.c): $(BPF_OBJ)
$(call obj,record/bpfobj.c): CFLAGS += -DVMR_BPF_OBJ='"$(abspath $(BPF_OBJ))"'

# (-z now: a replay process that calls a function of libc for the first
# time would otherwise write its GOT entry, after a fork a copy-on-write
# fault counted with the replay's)
$(B)/vmreplay: $(call obj,replay/vmreplay.c) $(LIBREPLAY) $(LIBANALYSIS) $(LIBVMTRACE)
	$(say) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) -Wl,-z,now -o $@ $(filter %.o %.a,$^) $(LDLIBS_ALL)

static: $(STATIC)
ifeq ($(SAN),1)
$(B)/vmreplay-static: replay/vmreplay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) \
		$(wildcard format/*.h replay/*.h replay/*/*.h analysis/*/*.h) | $(B)/.deps
	$(say) LINK $@
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE $(INCLUDES) $(WARNINGS) -O2 -pthread -static -s \
		-o $@ replay/vmreplay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) $(LDLIBS_ALL)
else
$(B)/vmreplay-static: $(call obj,replay/vmreplay.c) $(LIBREPLAY) $(LIBANALYSIS) $(LIBVMTRACE)
	$(say) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) -static -s -o $@ $(filter %.o %.a,$^) $(LDLIBS_ALL)
endif

# Unit tests link every library (order: users before providers).
$(B)/tests/%: tests/unit/%.c $(call obj,$(UNIT_HELPERS)) $(LIBS) | $(B)/.deps
	$(say) CC $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(call obj,$(UNIT_HELPERS)) $(LIBS) \
		$(CMOCKA_LIBS) $(SECCOMP_LIBS) $(UNWIND_LIBS) $(BPF_LIBS) $(LDLIBS_ALL)

# Workloads are the programs under test: built plainly, never sanitized.
$(B)/workloads/%: tests/workloads/%.c tests/workloads/workload.h format/linux_abi.h | $(B)/.deps
	$(say) CC $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -Iformat $(WARNINGS) -O2 -g -pthread -o $@ $< -lm

# The reader fuzz target (libFuzzer).  Built with clang, from the sources.
$(FUZZ_BIN): tests/fuzz/fuzz_reader.c $(FORMAT_SRC) format/vmtrace.h | $(B)/.deps
	$(say) CLANG $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -std=gnu11 -D_GNU_SOURCE -Iformat -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ tests/fuzz/fuzz_reader.c $(FORMAT_SRC) $(ZSTD_LIBS) -liberty -lm

# The replayer's fuzz target: generated traces loaded in the target, and
# replayed by a vmreplay built without sanitizers (FUZZ_PLAIN): replay
# processes fork from replay threads, and a sanitized process that forks
# while another thread holds its allocator's lock deadlocks in the child.
$(FUZZ_REPLAY_BIN): tests/fuzz/fuzz_replay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) \
		$(wildcard format/*.h replay/*.h replay/*/*.h analysis/*/*.h) $(FUZZ_PLAIN) | $(B)/.deps
	$(say) CLANG $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -std=gnu11 -D_GNU_SOURCE $(INCLUDES) -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -pthread \
		-DVMREPLAY_PLAIN='"$(abspath $(FUZZ_PLAIN))"' \
		-o $@ tests/fuzz/fuzz_replay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) $(ZSTD_LIBS) -liberty -lm

$(B)/fuzz/vmreplay-plain: replay/vmreplay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) \
		$(wildcard format/*.h replay/*.h replay/*/*.h analysis/*/*.h) | $(B)/.deps
	$(say) CC $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE $(INCLUDES) $(WARNINGS) -O2 -g -pthread \
		-o $@ replay/vmreplay.c $(FORMAT_SRC) $(REPLAY_SRC) $(ANALYSIS_SRC) $(LDLIBS_ALL)

$(B)/bench/fmtbench: bench/fmtbench.c $(LIBVMTRACE)
	$(say) CC $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMTRACE) $(LDLIBS_ALL)

# Golden traces of tests/data (see tests/data/README.md): rewrite them only
# when the format version changes.
$(B)/mkgolden: tests/data/mkgolden.c $(LIBVMTRACE)
	$(say) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMTRACE) $(LDLIBS_ALL)

$(B)/mkrandom: tests/data/mkrandom.c $(call obj,tests/unit/tgen.c) $(LIBVMTRACE)
	$(say) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(call obj,tests/unit/tgen.c) $(LIBVMTRACE) $(LDLIBS_ALL)

# Only the newest version's: the older ones, and their expected dumps,
# stay as their version wrote them.
golden: $(B)/mkgolden $(B)/vmtrace
	$(Q)$(B)/mkgolden tests/data
	$(Q)for t in every-kind-1.4; do \
		$(B)/vmtrace dump tests/data/$$t.zst > tests/data/$$t.dump && \
		$(B)/vmtrace dump --json tests/data/$$t.zst > tests/data/$$t.jsonl || exit 1; done

check: all $(UNIT_BINS) $(if $(filter 1,$(SAN)),,$(FUZZ_BIN) $(FUZZ_REPLAY_BIN)) $(B)/mkrandom
	$(Q)B=$(B) SAN=$(SAN) sh mk/check.sh $(UNIT_BINS)

fuzz: $(FUZZ_BIN)
	$(Q)mkdir -p $(B)/fuzz/corpus-fuzz_reader
	$(FUZZ_BIN) -max_total_time=$${FUZZ_SECONDS:-60} $(B)/fuzz/corpus-fuzz_reader tests/data

fuzz-replay: $(FUZZ_REPLAY_BIN)
	$(Q)mkdir -p $(B)/fuzz/corpus-fuzz_replay
	$(FUZZ_REPLAY_BIN) -max_total_time=$${FUZZ_SECONDS:-60} -timeout=30 -rss_limit_mb=2048 -max_len=2048 -len_control=10 \
		$(B)/fuzz/corpus-fuzz_replay

demo: all
	$(Q)B=$(B) sh mk/demo.sh

# (ab.sh compares two builds: it is run by hand, see its header)
bench: all
	$(Q)for s in bench/*.sh; do [ $$s = bench/ab.sh ] || B=$(B) sh $$s || exit 1; done

install: all
	$(say) INSTALL $(DESTDIR)$(PREFIX)
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	$(Q)install -m 755 $(PROGS) $(DESTDIR)$(BINDIR)/
	$(Q)if [ -n "$(RUNTIME)" ]; then install -d $(DESTDIR)$(PREFIX)/lib/vmrec && \
		install -m 644 $(RUNTIME) $(DESTDIR)$(PREFIX)/lib/vmrec/; fi
	$(Q)if [ -n "$(STATIC)" ]; then install -d $(DESTDIR)$(PREFIX)/lib/vmrec && \
		install -m 755 $(STATIC) $(DESTDIR)$(PREFIX)/lib/vmrec/; fi
	$(Q)for m in $(MANPAGES); do \
		s=$${m##*.}; install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

uninstall:
	$(Q)rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(PROGS)))
	$(Q)rm -f $(DESTDIR)$(PREFIX)/lib/vmrec/vmreplay-static $(DESTDIR)$(PREFIX)/lib/vmrec/vmrec-inproc.rt
	$(Q)rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1)))
	$(Q)rm -f $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(wildcard man/*.5)))

clean:
	$(say) CLEAN build build-san
	$(Q)rm -rf build build-san

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
