# xv6-rdma: the project's make interface.
#
# Targets (keep these names; README.md and .ci/run depend on them):
#   make              build kernel/kernel and fs.img
#   make qemu         boot one guest interactively (CPUS=N, default 3)
#   make qemu-gdb     same, waiting for gdb on tcp::26000
#   make demo         the main job (see README.md)
#   make test         every test suite CI runs
#   make test-kernel  boot, run usertests in the guest, power off
#   make test-spec    SPIN model checks + rule traceability
#   make test-unit    transport core: Check suites, sanitizers, short fuzz, simulator
#   make test-net     two guests over linkemu: ARP, ping, UDP echo, loss counts
#   make test-rdma    verbs and transport in guests (issue: RDMA)
#   make test-interop xv6 against a Linux Soft-RoCE guest (xrpeer), both ways
#   make soak         SOAK_MINUTES (30) of traffic under changing impairments
#                     and process kills; every byte checked, resources back
#   make test-soak    the soak for 3 minutes (in make test)
#   make bench        RDMA benchmarks in guests -> bench/results/
#   make bench-sim    transport benchmarks in the host simulator -> bench/results/
#   make linux-image  the Linux Soft-RoCE guest (build/linux/: bzImage, initrd.img)
#   make test-linux-guest  xv6 and Linux guests on one link: ping, rxe0, ib_write_bw
#   make fuzz         libFuzzer on the frame parser and responder (FUZZ_SECONDS=N), and
#                     (first) the guest syscall fuzzer (FUZZ_GUEST_SECONDS, default 600)
#
# Each subsystem keeps its rules in a fragment next to its sources; this file
# only ties them together. Host tools build into build/.

.DEFAULT_GOAL := all
SHELL := /bin/bash
CPUS ?= 3
BUILD := build
# The reference RoCEv2 captures from Linux Soft-RoCE (test fixtures, tests/vectors/README.md).
VECTORS_DIR := tests/vectors
# The interpreter of the benches that plot: Debian's python3 has
# python3-matplotlib (deps.sh); a pyenv/venv python3 earlier on PATH may not.
PLOT_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

# Install missing Debian packages before anything else is built. The stamp is
# an included makefile: GNU make first remakes it (running tests/deps.sh), then
# reads every makefile again, so no variable below is computed before the
# tools that deps.sh installs exist, and every target works on the first run
# of a fresh machine. `make clean` alone installs nothing.
DEPS_STAMP := $(BUILD)/deps.mk
$(DEPS_STAMP): tests/deps.sh
	@mkdir -p $(BUILD)
	@bash tests/deps.sh
	@echo '# written after tests/deps.sh succeeded (see the top Makefile)' > $@
ifneq ($(MAKECMDGOALS),clean)
include $(DEPS_STAMP)
endif
deps: $(DEPS_STAMP)
.PHONY: deps

# A recipe that fails or is interrupted (make -j2 | head) leaves no half-written
# target that a later make would take as up to date.
.DELETE_ON_ERROR:

include kernel/kernel.mk
include user/user.mk
include tests/tests.mk
include proto-spec/spec.mk
include kernel/transport/transport.mk
include netem/netem.mk
include tests/linux/linux.mk       # before the fragments whose rules name $(LINUX_IMAGE)
include tests/sim/sim.mk
include tests/net/net.mk
include tests/rdma/rdma.mk
include tests/rdma/atomic.mk
include tests/rdma/rmem.mk
include tests/linux/peer/peer.mk
include tests/interop/interop.mk
include tests/soak/soak.mk
include bench/experiment.mk        # make experiment EXP=FILE, make test-experiment

all: deps kernel/kernel fs.img

# The suites CI runs, quickest first so a broken build fails early.
# test-interop, test-netem and test-soak boot Linux guests (tests/linux/: the
# image is built from Debian packages on first use, about a minute).
TEST_SUITES := test-spec test-unit test-kernel test-net test-rdma test-interop test-netem test-soak

# Host-side transport tests: Check suites + sanitizers + short fuzz (test-core,
# kernel/transport/transport.mk) and the lossy-link simulation matrix (test-sim,
# tests/sim/sim.mk).
# Every suite ends with "NAME: N passed, M failed" (tests/harness/suite.py sums
# the steps of the ones made of several); `make test` ends with the total of
# all of them and stops at the first suite that fails.
test-unit: deps
	@python3 tests/harness/suite.py test-unit -- "$(MAKE) --no-print-directory test-core" \
	  "$(MAKE) --no-print-directory test-sim" "python3 tests/harness/test_goals.py" \
	  "python3 tests/rdma/test_demo_args.py" "$(MAKE) --no-print-directory test-ud-vectors" \
	  "$(MAKE) --no-print-directory test-cm-vectors"
.PHONY: test-unit
test: deps
	@python3 tests/harness/suite.py test --stop-on-fail -- \
	  $(foreach t,$(TEST_SUITES),"echo '=== make $(t)'; $(MAKE) --no-print-directory $(t)")

# The main job: two guests on a lossy link copy a file with RDMA (tests/rdma/rdma.mk).
demo: deps rdma-demo

# Every benchmark, one after the other: the raw link ceiling, the RDMA sweeps
# (bench-rdma writes rdma-summary.md; bench-rxe and bench-lat add their
# sections to it), the small-message rate beside rxe's and the small-frame
# RoCE ceiling (bench-msgrate), perftest -R in every xv6/rxe pairing (bench-pairs),
# QP scaling, the guests' work per frame, librmem's READ / WRITE (bench-rmem),
# remote atomics beside rxe's (bench-atomic), the simulator, paging to a
# memory node (bench-rmem-paging);
# then bench/rdma/goals.py puts the goals this run met or missed at the top
# of rdma-summary.md.
BENCH_PARTS := bench-net bench-rdma bench-qp bench-rxe bench-msgrate bench-pairs bench-lat bench-frames bench-rmem bench-atomic bench-sim \
  bench-rmem-paging
bench: deps
	@start=$$(date +%s) && \
	  for t in $(BENCH_PARTS); do $(MAKE) --no-print-directory $$t || exit 1; done && \
	  python3 bench/rdma/goals.py --since $$start

.PHONY: demo bench

clean: $(CLEAN_TARGETS)
	rm -rf $(BUILD) fs.img

.PHONY: all test clean
