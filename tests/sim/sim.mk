# tests/sim/sim.mk: the host simulator and its tests (included by the top Makefile).
#
#   make test-sim    impairment-engine unit tests, the linkemu host test and
#                    the scenario matrix (two transport endpoints over the
#                    simulated lossy link, in virtual time)
#   make bench-sim   goodput / completion-time / CPU benchmarks -> bench/results/sim-*
#
# Knobs: SIM_SEED (base seed, default 1), SIM_JOBS (matrix workers, default 2),
# SIM_FILTER (run only scenarios whose name contains it),
# SIM_BENCH_ARGS (extra arguments to sim-bench, e.g. --quick).
# The transport core comes from kernel/transport/transport.mk (RCT_LIB,
# RCT_CFLAGS); the impairment engine and linkemu from netem/netem.mk.

SIM_DIR    := tests/sim
SIM_OUT    := $(BUILD)/sim
SIM_SEED   ?= 1
SIM_JOBS   ?= 2
SIM_FILTER ?=
SIM_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -g -Wall -Wextra -Wno-format-truncation $(RCT_CFLAGS)
SIM_KNOWN  := $(SIM_DIR)/known_failures.txt

SIM_CORE_SRCS := $(SIM_DIR)/sim.c $(SIM_DIR)/sim_link.c $(SIM_DIR)/scenario.c $(NETEM_IMPAIR_SRC)
SIM_HDRS      := $(wildcard $(SIM_DIR)/*.h) $(NETEM_IMPAIR_HDR) $(RCT_HDRS)

SIM_TEST_IMPAIR := $(SIM_OUT)/test-impair
SIM_MATRIX      := $(SIM_OUT)/sim-matrix
SIM_BENCH       := $(SIM_OUT)/sim-bench

$(SIM_TEST_IMPAIR): $(SIM_DIR)/test_impair.c $(NETEM_IMPAIR_SRC) $(NETEM_IMPAIR_HDR)
	@mkdir -p $(@D)
	gcc -std=c99 -O2 -g -Wall -Wextra -o $@ $(SIM_DIR)/test_impair.c $(NETEM_IMPAIR_SRC) -lm

$(SIM_MATRIX): $(SIM_DIR)/matrix.c $(SIM_CORE_SRCS) $(SIM_HDRS) $(RCT_LIB)
	@mkdir -p $(@D)
	gcc $(SIM_CFLAGS) -o $@ $(SIM_DIR)/matrix.c $(SIM_CORE_SRCS) $(RCT_LIB) -lm

$(SIM_BENCH): bench/sim/bench.c $(SIM_CORE_SRCS) $(SIM_HDRS) $(RCT_LIB)
	@mkdir -p $(@D)
	gcc $(SIM_CFLAGS) -I$(SIM_DIR) -o $@ bench/sim/bench.c $(SIM_CORE_SRCS) $(RCT_LIB) -lm

test-impair: $(SIM_TEST_IMPAIR)
	@echo "=== impairment engine unit tests"
	@$(SIM_TEST_IMPAIR)
.PHONY: test-impair

sim-matrix: $(SIM_MATRIX)
	@echo "=== simulator scenario matrix (seed $(SIM_SEED))"
	@$(SIM_MATRIX) --seed $(SIM_SEED) -j $(SIM_JOBS) --known-failures $(SIM_KNOWN) \
	  $(if $(SIM_FILTER),--filter "$(SIM_FILTER)")
.PHONY: sim-matrix

test-sim: $(SIM_TEST_IMPAIR) $(SIM_MATRIX) $(LINKEMU)
	@python3 tests/harness/suite.py test-sim -- "$(MAKE) --no-print-directory test-impair" \
	  "$(MAKE) --no-print-directory test-linkemu" "$(MAKE) --no-print-directory sim-matrix"
.PHONY: test-sim

bench-sim: $(DEPS_STAMP) $(SIM_BENCH)
	@mkdir -p bench/results
	$(SIM_BENCH) --out bench/results $(SIM_BENCH_ARGS)
	$(PLOT_PYTHON) bench/sim/plot.py bench/results
.PHONY: bench-sim

clean-sim:
	rm -rf $(SIM_OUT)
.PHONY: clean-sim
CLEAN_TARGETS += clean-sim
