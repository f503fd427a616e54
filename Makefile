# dcpi — continuous profiling infrastructure.  Plain make, pkg-config, no magic.
#   make            build bin/dcpi and its command links
#   make check      install build deps if missing, build, run the test suite
#                   (plain, then ASan+UBSan, then a fuzz smoke run)
#   make test       run the test suite on the current build only
#   make asan       the suite under AddressSanitizer + UBSan (separate build dir)
#   make fuzz       build the libFuzzer targets and smoke-run each
#   make demo       profile a real workload into ./dcpidb and show the report
#   make install    DESTDIR/prefix install

prefix  ?= /usr/local
bindir  ?= $(prefix)/bin
mandir  ?= $(prefix)/share/man
O       ?= build
CC      ?= cc

PKGS    := libelf libdw capstone zlib libarchive
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -Wno-sign-compare
CFLAGS  ?= -O2 -g
VERSION := $(shell cat VERSION 2>/dev/null || echo unknown)
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -Iinclude -Ilib $(PKG_CFLAGS) \
              -D_GNU_SOURCE -DDCPI_VERSION='"$(VERSION)"' -MMD -MP
LDLIBS  := $(PKG_LIBS) -liberty -lm $(EXTRA_LDFLAGS)

LIB_SRC   := $(sort $(wildcard lib/*/*.c))
CMD_SRC   := $(sort $(wildcard src/*.c))
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
WL_SRC    := $(sort $(wildcard tests/workloads/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(O)/%.o) $(O)/lib/export/html_assets.o
CMD_OBJ   := $(CMD_SRC:%.c=$(O)/%.o)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)

# Every command is the one multi-call binary under its classic name.
COMMANDS  := dcpid dcpictl dcpiepoch dcpiflush dcpiquit dcpicat dcpiprof dcpilist dcpicalc dcpix dcpitopcounts dcpitopstalls dcpiwhatcg dcpicoverage dcpidiff dcpistats dcpilabel dcpitar dcpi-record dcpi-report dcpi-bins
BIN       := bin/dcpi $(COMMANDS:%=bin/%)

all: $(BIN) $(UNIT_BIN) $(O)/libdcpidyn.a

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)/lib/base/version.o: VERSION

# dcpi report's script and style sheet, carried in the binary (.incbin)
$(O)/lib/export/html_assets.o: lib/export/html_assets.S lib/export/report.js lib/export/report.css
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

# The dynamic-code API for JITs (dcpi_dyn(3)): standalone, nothing of libdcpi.
$(O)/libdcpidyn.a: dyn/dcpi_dyn.c dyn/dcpi_dyn.h
	@mkdir -p $(O)/dyn
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $(O)/dyn/dcpi_dyn.o $<
	@rm -f $@
	ar rcs $@ $(O)/dyn/dcpi_dyn.o

# The value profiler as a preload library (libdcpivp(7)): vp/ and the few
# pieces of libdcpi it needs (the bins file's parser), all compiled -fPIC
# and hidden, so that it exports nothing but the libc functions it
# interposes.  x86-64 only (the time-stamp counter, the decoder's
# registers).  Never built with sanitizers: an ASan runtime must be the
# first library of the program it is in, and the programs this one is
# preloaded into are not built with it (the ASan build makes it with the
# same compiler and warnings, without -fsanitize).  --gc-sections drops
# what of bins.c it does not call (the writer, and with it buf.c).
VP_SRC    := $(sort $(wildcard vp/*.c))
VP_LIBSRC := lib/store/bins.c lib/base/error.c lib/base/file.c lib/base/grow.c
VP_OBJ    := $(VP_SRC:%.c=$(O)/vp/%.o) $(VP_LIBSRC:%.c=$(O)/vp/%.o)
# Capstone is dlopen'd when sampling starts, by the soname of the one
# whose headers it is compiled with (nothing loaded when DCPI_VTRACE is unset)
VP_CS_SONAME := $(shell objdump -p "$$(pkg-config --variable=libdir capstone)/libcapstone.so" \
                  2>/dev/null | awk '/SONAME/ { print $$2 }')
VP_CFLAGS := $(filter-out -fsanitize=%,$(ALL_CFLAGS)) -fno-sanitize=all -fPIC \
             -fvisibility=hidden -ffunction-sections -fdata-sections \
             $(if $(VP_CS_SONAME),-DVP_CAPSTONE='"$(VP_CS_SONAME)"')
ifeq ($(filter x86_64-%,$(shell $(CC) -dumpmachine)),)
VP_BIN    :=
else
VP_BIN    := bin/libdcpivp.so
endif
all: $(VP_BIN)

$(O)/vp/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(VP_CFLAGS) -c -o $@ $<

$(O)/libdcpivp.so: $(VP_OBJ)
	$(CC) $(VP_CFLAGS) -shared -Wl,-z,defs -Wl,-z,now -Wl,--gc-sections -Wl,--as-needed \
	  -o $@ $(VP_OBJ) -ldl -lpthread

bin/libdcpivp.so: $(O)/libdcpivp.so
	@mkdir -p bin
	cp $< $@.tmp && mv -f $@.tmp $@

$(O)/libdcpi.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(O)/dcpi: $(CMD_OBJ) $(O)/libdcpi.a
	$(CC) $(ALL_CFLAGS) -o $@ $(CMD_OBJ) $(O)/libdcpi.a $(LDLIBS)

# cp + mv: a running daemon keeps its old binary, and "text file busy" never stops a build
bin/dcpi: $(O)/dcpi
	@mkdir -p bin
	cp $< $@.tmp && mv -f $@.tmp $@

$(COMMANDS:%=bin/%): bin/dcpi
	ln -sf dcpi $@

$(O)/tests/%: tests/unit/%.c $(O)/libdcpi.a tests/unit/tap.h tests/unit/fixture.h tests/unit/replay.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(O)/libdcpi.a $(LDLIBS)

# The golden tests' database generator (the scripts in tests/golden run it).
GOLDEN_BIN := $(O)/tests/mkdb
all bin-asan: $(GOLDEN_BIN)
$(GOLDEN_BIN): tests/golden/mkdb.c $(O)/libdcpi.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdcpi.a $(LDLIBS)

# A report command on one page (tests/golden/page.c, tests/golden/page.sh):
# the commands' objects but the multi-call main, and the library.
PAGE_BIN := $(O)/tests/page
PAGE_OBJ := $(filter-out $(O)/src/dcpi.o,$(CMD_OBJ))
all bin-asan: $(PAGE_BIN)
$(PAGE_BIN): tests/golden/page.c $(PAGE_OBJ) $(O)/libdcpi.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc -o $@ $< $(PAGE_OBJ) $(O)/libdcpi.a $(LDLIBS)

# ---- tests -----------------------------------------------------------------
test: all
	O=$(O) tests/run

deps:
	scripts/install-deps

# The builds of make check (normal, ASan, fuzz) compile one file per CPU.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
check: deps
	$(MAKE) -j$(or $(CHECK_JOBS),1) all
	CHECK_JOBS=$(or $(CHECK_JOBS),1) scripts/check-all

asan:
	$(MAKE) O=build-asan CC=clang \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" \
	  bin-asan
	@rm -rf build-asan/logs && mkdir -p build-asan/logs
	# Reports go to files too: a daemon's stderr is /dev/null once it detaches.
	# (MAKEFLAGS emptied: a test that runs make, e2e/package, gets no jobserver of ours)
	ASAN_OPTIONS=log_path=$(CURDIR)/build-asan/logs/asan:detect_leaks=1 \
	UBSAN_OPTIONS=log_path=$(CURDIR)/build-asan/logs/ubsan:print_stacktrace=1 \
	  MAKEFLAGS= O=build-asan DCPI_BIN=build-asan/bin tests/run; rc=$$?; \
	if ls build-asan/logs/* >/dev/null 2>&1; then \
	  echo "sanitizer reports:"; cat build-asan/logs/*; \
	  echo "0 passed, 1 failed, 0 skipped"; exit 1; fi; exit $$rc

bin-asan: $(O)/dcpi $(UNIT_BIN) $(VP_BIN:bin/%=$(O)/%)
	@mkdir -p $(O)/bin
	cp $(O)/dcpi $(O)/bin/dcpi.tmp && mv -f $(O)/bin/dcpi.tmp $(O)/bin/dcpi
	for v in $(VP_BIN:bin/%=%); do cp $(O)/$$v $(O)/bin/$$v.tmp && mv -f $(O)/bin/$$v.tmp $(O)/bin/$$v; done
	for c in $(COMMANDS); do ln -sf dcpi $(O)/bin/$$c; done

FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
# The library is compiled once for all targets (instrumented for the fuzzer,
# not linked with its main), then each target links against it.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Iinclude -Ilib $(PKG_CFLAGS) -D_GNU_SOURCE
FUZZ_OBJ := $(LIB_SRC:%.c=build-fuzz/obj/%.o)
# The min-cost flow solver is arithmetic in loops: the fuzzer's tracing of
# its comparisons was most of fuzz_cfg's time (under 1,000 runs/s) and
# guides nothing, so it is built with the sanitizers but without coverage.
FUZZ_COV := -fsanitize=fuzzer-no-link
build-fuzz/obj/lib/analysis/flow.o: FUZZ_COV :=
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(FUZZ_COV) -fsanitize=address,undefined -MMD -MP -c -o $@ $<
build-fuzz/libdcpi.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
build-fuzz/%: fuzz/%.c build-fuzz/libdcpi.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libdcpi.a \
	  $(LDLIBS)
fuzz: $(FUZZ_BIN)
	scripts/fuzz-smoke $(FUZZ_BIN)

demo: deps
	$(MAKE) all
	scripts/demo

# dcpid against perf record (needs root); not a test, not in CI.  See
# docs/performance.md.  make bench BENCH_ARGS=-quick for a short smoke run.
# collbench: the collector's per-sample cost alone (no kernel, no noise).
COLLBENCH := $(O)/bench/collbench
# stackdepth: how much stack a sample must copy to unwind whole (issue 25)
STACKDEPTH := $(O)/bench/stackdepth
all: $(STACKDEPTH)
$(STACKDEPTH): bench/tools/stackdepth.c $(O)/libdcpi.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdcpi.a $(LDLIBS)
# hostile: what a user's hostile perf map, jitdump or unwind rows cost
# the daemon's readers, against the same amount of ordinary input
HOSTILE := $(O)/bench/hostile
all: $(HOSTILE)
$(HOSTILE): bench/tools/hostile.c $(O)/libdcpi.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdcpi.a $(LDLIBS)
$(COLLBENCH): bench/tools/collbench.c $(O)/libdcpi.a tests/unit/replay.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(O)/libdcpi.a $(LDLIBS)
bench: deps
	$(MAKE) all $(COLLBENCH)
	COLLBENCH=$(COLLBENCH) bench/run $(BENCH_ARGS)
.PHONY: bench

# dcpicalc's estimates against exact counts (callgrind) on kernels, real
# programs and real programs held out, five profiles each (llvm-mca's model
# beside dcpi's where llvm-mca is installed); not a test, not in CI.  See
# docs/performance.md and dcpicalc(1), ACCURACY.
ACC_BIN := $(O)/bench/accuracy
$(ACC_BIN): bench/accuracy/accuracy.c $(O)/libdcpi.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libdcpi.a $(LDLIBS)
accuracy: deps
	$(MAKE) all $(ACC_BIN)
	O=$(O) bench/accuracy/run
.PHONY: accuracy

# ---- install ---------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man3 \
	  $(DESTDIR)$(mandir)/man5 $(DESTDIR)$(mandir)/man7 $(DESTDIR)$(mandir)/man8 \
	  $(DESTDIR)$(prefix)/include $(DESTDIR)$(prefix)/lib
	install -m 644 dyn/dcpi_dyn.h $(DESTDIR)$(prefix)/include/
	install -m 644 $(O)/libdcpidyn.a $(DESTDIR)$(prefix)/lib/
	for v in $(VP_BIN); do install -d $(DESTDIR)$(prefix)/lib/dcpi && \
	  install -m 644 $$v $(DESTDIR)$(prefix)/lib/dcpi/; done
	install -m 755 bin/dcpi $(DESTDIR)$(bindir)/dcpi
	for c in $(COMMANDS); do ln -sf dcpi $(DESTDIR)$(bindir)/$$c; done
	for m in man/*.[13578]; do s=$${m##*.}; install -m 644 $$m $(DESTDIR)$(mandir)/man$$s/; done

uninstall:
	for c in dcpi $(COMMANDS); do rm -f $(DESTDIR)$(bindir)/$$c; done
	for m in man/*.[13578]; do s=$${m##*.}; rm -f $(DESTDIR)$(mandir)/man$$s/$${m##*/}; done
	rm -f $(DESTDIR)$(prefix)/include/dcpi_dyn.h $(DESTDIR)$(prefix)/lib/libdcpidyn.a
	rm -f $(DESTDIR)$(prefix)/lib/dcpi/libdcpivp.so
	-rmdir $(DESTDIR)$(prefix)/lib/dcpi 2>/dev/null

# ---- the Debian package: dcpi_VERSION_ARCH.deb here, built from a copy of
# the tracked tree (dpkg-buildpackage writes beside its source directory)
deb:
	scripts/build-deb

clean:
	rm -rf build build-asan build-fuzz bin

.PHONY: all test deps check asan bin-asan fuzz demo install uninstall deb clean
-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(VP_OBJ:.o=.d)
