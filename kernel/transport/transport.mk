# transport.mk: build and test rules of the RC transport core (kernel/transport).
#
# Owns: the host static library of the core (for tests/sim and tests/unit),
# the Check suites (gcc, and clang with ASan/UBSan), and the libFuzzer targets.
#
# For other fragments (e.g. tests/sim/sim.mk):
#   RCT_CFLAGS   compile flags incl. -I for rct.h (#include "rct.h")
#   RCT_LIB      the host static library, build it as a prerequisite
#   RCT_SRCS     the core's sources (the kernel build compiles these too)
#   CM_SRCS      the connection manager's (kernel/cm); RCT_LIB holds them too
#   RMEM_SRCS    the remote-memory codec's (kernel/rmem/rmem_wire.c); RCT_LIB too
#   HOST_MR_SRC, HOST_MR_HDR, HOST_MR_CFLAGS
#                the host MR backend (tests/host/host_mr.c) that every host
#                build gives the core as its rct_mr_ops
#
# Targets: test-core (suites under gcc + ASan/UBSan + a short fuzz run),
#          fuzz (FUZZ_SECONDS, default 60), rct-lib, clean-transport.

RCT_DIR     := kernel/transport
RCT_SRCS    := $(addprefix $(RCT_DIR)/,wire.c icrc.c opcode.c dev.c qp.c post.c sge.c timer.c rx.c tx.c rc.c ud.c req.c resp.c sr_resp.c comp.c cq.c event.c names.c)
RCT_HDRS    := $(wildcard $(RCT_DIR)/*.h)
# The connection manager (kernel/cm) sits above the core; the host library
# holds it too, for its Check suites and the frame-parser fuzzer.
CM_DIR      := kernel/cm
CM_SRCS     := $(addprefix $(CM_DIR)/,ibcm_mad.c ibcm.c)
CM_HDRS     := $(wildcard $(CM_DIR)/*.h)
# The remote-memory codec (kernel/rmem), sans-IO too: its Check suite.
RMEM_DIR    := kernel/rmem
RMEM_SRCS   := $(RMEM_DIR)/rmem_wire.c
RMEM_HDRS   := $(RMEM_DIR)/rmem_wire.h
RCT_CFLAGS  := -std=c99 -I$(RCT_DIR) -I$(CM_DIR) -I$(RMEM_DIR)
RCT_WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
RCT_OUT     := $(BUILD)/transport
RCT_LIB     := $(RCT_OUT)/librct.a
RCT_OBJS    := $(patsubst $(RCT_DIR)/%.c,$(RCT_OUT)/%.o,$(RCT_SRCS)) \
               $(patsubst $(CM_DIR)/%.c,$(RCT_OUT)/cm/%.o,$(CM_SRCS)) \
               $(patsubst $(RMEM_DIR)/%.c,$(RCT_OUT)/rmem/%.o,$(RMEM_SRCS))
HOST_MR_SRC    := tests/host/host_mr.c
HOST_MR_HDR    := tests/host/host_mr.h
HOST_MR_CFLAGS := -Itests/host
CONTRACT_HDRS   := kernel/transport/mr_contract.h
CONTRACT_CFLAGS :=

# Sanitizer build of the core (clang, ASan+UBSan) for the suites and fuzzers.
RCT_SAN_OUT   := $(BUILD)/transport-san
RCT_SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
RCT_SAN_LIB   := $(RCT_SAN_OUT)/librct.a
RCT_SAN_OBJS  := $(patsubst $(RCT_DIR)/%.c,$(RCT_SAN_OUT)/%.o,$(RCT_SRCS)) \
                 $(patsubst $(CM_DIR)/%.c,$(RCT_SAN_OUT)/cm/%.o,$(CM_SRCS)) \
                 $(patsubst $(RMEM_DIR)/%.c,$(RCT_SAN_OUT)/rmem/%.o,$(RMEM_SRCS))

RCT_UNIT_SRCS := $(wildcard tests/unit/*.c)
RCT_UNIT_HDRS := $(wildcard tests/unit/*.h)
# Expanded in recipes (=), after the deps step has installed check.
RCT_CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
RCT_CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)
RCT_UNIT_BIN     := $(RCT_OUT)/unit-tests
RCT_UNIT_SAN_BIN := $(RCT_SAN_OUT)/unit-tests
RCT_BENCH_BIN    := $(RCT_OUT)/rct-bench

RCT_FUZZ_OUT     := $(BUILD)/fuzz
RCT_FUZZ_TARGETS := fuzz_parser fuzz_responder
RCT_FUZZ_BINS    := $(addprefix $(RCT_FUZZ_OUT)/,$(RCT_FUZZ_TARGETS))
RCT_FUZZ_SMOKE   ?= 10
FUZZ_SECONDS     ?= 60

$(RCT_OUT)/%.o: $(RCT_DIR)/%.c $(RCT_HDRS)
	@mkdir -p $(@D)
	gcc $(RCT_CFLAGS) $(RCT_WARN) -O2 -g -c $< -o $@

$(RCT_OUT)/cm/%.o: $(CM_DIR)/%.c $(CM_HDRS) $(RCT_HDRS)
	@mkdir -p $(@D)
	gcc $(RCT_CFLAGS) $(RCT_WARN) -O2 -g -c $< -o $@

$(RCT_OUT)/rmem/%.o: $(RMEM_DIR)/%.c $(RMEM_HDRS)
	@mkdir -p $(@D)
	gcc $(RCT_CFLAGS) $(RCT_WARN) -O2 -g -c $< -o $@

$(RCT_LIB): $(RCT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(RCT_SAN_OUT)/%.o: $(RCT_DIR)/%.c $(RCT_HDRS)
	@mkdir -p $(@D)
	clang $(RCT_CFLAGS) $(RCT_WARN) $(RCT_SAN_FLAGS) -c $< -o $@

$(RCT_SAN_OUT)/cm/%.o: $(CM_DIR)/%.c $(CM_HDRS) $(RCT_HDRS)
	@mkdir -p $(@D)
	clang $(RCT_CFLAGS) $(RCT_WARN) $(RCT_SAN_FLAGS) -c $< -o $@

$(RCT_SAN_OUT)/rmem/%.o: $(RMEM_DIR)/%.c $(RMEM_HDRS)
	@mkdir -p $(@D)
	clang $(RCT_CFLAGS) $(RCT_WARN) $(RCT_SAN_FLAGS) -c $< -o $@

$(RCT_SAN_LIB): $(RCT_SAN_OBJS)
	@rm -f $@
	ar rcs $@ $^

rct-lib: $(RCT_LIB)
.PHONY: rct-lib

RCT_UNIT_MAIN := $(filter-out tests/unit/bench.c,$(RCT_UNIT_SRCS))

RCT_UNIT_DEPS := $(RCT_UNIT_MAIN) $(RCT_UNIT_HDRS) $(HOST_MR_SRC) $(HOST_MR_HDR) $(CONTRACT_HDRS) $(CM_HDRS) $(RMEM_HDRS)
RCT_UNIT_INC  := -Itests/unit $(HOST_MR_CFLAGS) $(CONTRACT_CFLAGS)

$(RCT_UNIT_BIN): $(RCT_UNIT_DEPS) $(RCT_LIB)
	gcc $(RCT_CFLAGS) $(RCT_UNIT_INC) $(RCT_WARN) -O1 -g $(RCT_CHECK_CFLAGS) $(RCT_UNIT_MAIN) $(HOST_MR_SRC) $(RCT_LIB) $(RCT_CHECK_LIBS) -o $@

$(RCT_UNIT_SAN_BIN): $(RCT_UNIT_DEPS) $(RCT_SAN_LIB)
	clang $(RCT_CFLAGS) $(RCT_UNIT_INC) $(RCT_WARN) $(RCT_SAN_FLAGS) $(RCT_CHECK_CFLAGS) $(RCT_UNIT_MAIN) $(HOST_MR_SRC) $(RCT_SAN_LIB) $(RCT_CHECK_LIBS) -o $@

$(RCT_BENCH_BIN): tests/unit/bench.c $(HOST_MR_SRC) $(HOST_MR_HDR) $(RCT_SRCS) $(RCT_HDRS)
	@mkdir -p $(@D)
	gcc $(RCT_CFLAGS) $(HOST_MR_CFLAGS) -O2 -march=native tests/unit/bench.c $(HOST_MR_SRC) $(RCT_SRCS) -o $@

# Fuzzers: clang libFuzzer + ASan/UBSan, the core compiled in.
$(RCT_FUZZ_OUT)/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(HOST_MR_SRC) $(HOST_MR_HDR) $(RCT_SRCS) $(RCT_HDRS) $(CM_SRCS) $(CM_HDRS)
	@mkdir -p $(@D)
	clang $(RCT_CFLAGS) -Itests/fuzz $(HOST_MR_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 $< $(HOST_MR_SRC) $(RCT_SRCS) $(CM_SRCS) -o $@

# Seed corpora from the vectors (tests/fuzz/seeds.py), kept in tests/fuzz/corpus/{parser,responder}.

# The suite: each Check binary (Check prints "N%: Checks: X, Failures: Y,
# Errors: Z") and each fuzz smoke run is a step of tests/harness/suite.py,
# which ends with "test-core: N passed, M failed".
RCT_CHECK_RUN := cd $(CURDIR) && RCT_VECTORS=$(VECTORS_DIR)
test-core: $(RCT_UNIT_BIN) $(RCT_UNIT_SAN_BIN) $(RCT_FUZZ_BINS)
	@python3 tests/harness/suite.py test-core -- \
	  "echo '=== transport: Check suites (gcc -O1)'; $(RCT_CHECK_RUN) CK_FORK=yes ./$(RCT_UNIT_BIN)" \
	  "echo '=== transport: Check suites (clang ASan+UBSan)'; $(RCT_CHECK_RUN) CK_FORK=no \
	    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    ./$(RCT_UNIT_SAN_BIN)" \
	  "echo '=== transport: the core inner order (docs/kernel.md, Core order:)'; \
	    python3 tests/harness/layers.py --core-only --objects $(RCT_OUT) --nm nm" \
	  $(foreach t,$(RCT_FUZZ_TARGETS),"$(MAKE) --no-print-directory fuzz-smoke-$(t)")
.PHONY: test-core

# One fuzz target for RCT_FUZZ_SMOKE seconds; fails on a crash or sanitizer report.
fuzz-smoke-%: $(RCT_FUZZ_OUT)/%
	@echo "=== transport: fuzz smoke $* ($(RCT_FUZZ_SMOKE)s)"
	@mkdir -p $(RCT_FUZZ_OUT)/corpus-$*
	@./$(RCT_FUZZ_OUT)/$* -max_total_time=$(RCT_FUZZ_SMOKE) -print_final_stats=1 \
	  -artifact_prefix=$(RCT_FUZZ_OUT)/crash-$*- $(RCT_FUZZ_OUT)/corpus-$* tests/fuzz/corpus/$(*:fuzz_%=%) 2>&1 \
	  | grep -E '^(stat::number_of_executed_units|stat::peak_rss|==.*ERROR|SUMMARY)'; \
	  test $${PIPESTATUS[0]} -eq 0

fuzz: $(RCT_FUZZ_BINS)
	@set -e; for t in $(RCT_FUZZ_TARGETS); do \
	  mkdir -p $(RCT_FUZZ_OUT)/corpus-$$t; \
	  echo "=== fuzz $$t for $(FUZZ_SECONDS)s"; \
	  ./$(RCT_FUZZ_OUT)/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(RCT_FUZZ_OUT)/crash-$$t- $(RCT_FUZZ_OUT)/corpus-$$t tests/fuzz/corpus/$${t#fuzz_}; done
.PHONY: fuzz

# Header processing rate (frames/s per core), with and without software ICRC.
bench-core: $(RCT_BENCH_BIN)
	./$(RCT_BENCH_BIN)
.PHONY: bench-core

clean-transport:
	rm -rf $(RCT_OUT) $(RCT_SAN_OUT) $(RCT_FUZZ_OUT)
.PHONY: clean-transport
CLEAN_TARGETS += clean-transport
