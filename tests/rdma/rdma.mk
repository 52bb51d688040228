# tests/rdma/rdma.mk: in-guest tests of the RDMA verbs layer and transport.
#
#   make test-rdma        tests/rdma/run_all.py: rdmatest (loopback, 1 and 3
#                         CPUs), rdmanet (0/1 % loss), the opcode x size
#                         matrix under every impairment, the security checks,
#                         rdmacp of 16 MiB at 1 % loss, a perf smoke run,
#                         the tools' error messages (run_errors.py);
#                         ends with "N passed, M failed" over all of them
#   make test-rdma-quick  rdmatest -q (no 1 MiB transfers) in one guest
#   make test-rdma-examples  tests/rdma/run_examples.py: the rdma_cm examples
#                         (user/examples) on two guests at 0 and 1 % loss,
#                         bytes checked on both ends, and librdmacm's own
#                         rdma_server / rdma_client unmodified (fetched from
#                         Debian, user/upstream/) to exit 0 (a step of test-rdma)
#   make test-rdma-udping  tests/rdma/run_udping.py: UD (udping) between two
#                         guests at 0 and 1 % loss (a step of test-rdma)
#   make test-rdma-rping  tests/rdma/run_rping.py: xv6's rping (Linux rping's
#                         protocol) between two guests, -V at 64 B and 4 KiB,
#                         0 and 1 % loss, a port nobody listens on (a step of test-rdma)
#   make test-rdma-udaddy  tests/rdma/run_udaddy.py: xv6's udaddy (RDMA_PS_UDP:
#                         SIDR, then UD datagrams) between two guests, a port
#                         nobody listens on (a step of test-rdma)
#   make test-rdma-perftest-r  tests/rdma/run_perftest_r.py: rdma_bw -R and
#                         rdma_lat -R (perftest's rdma_cm exchange) between two
#                         guests, its wire order checked (a step of test-rdma)
#   make test-rdma-rmem-client  tests/rdma/run_rmem_client.py: the kernel's
#                         client of a memory node (kernel/rmem/rmem_client.c)
#                         against rmemd, 0 and 1 % loss (a step of test-rdma)
#   make test-rdma-rmem-paging  tests/rdma/run_rmem_paging.py: demand paging
#                         (kernel/core/pager.c) of a 48M guest to rmemd,
#                         memtouch at twice the free memory, one and two
#                         processes, 0 and 1 % loss, rmemd killed mid-run
#                         (a step of test-rdma)
#   make bench-rmem-paging  bench/rdma/rmem_paging.py: memtouch paging to rmemd
#                         against all-local and the 4 KiB READ, 0 and 1 % loss
#                         -> bench/results/rmem-paging.{md,csv,png}
#   make fuzz-guest       tests/rdma/run_hostile.py: rdmahostile, then the
#                         syscall fuzzer rdmafuzz for FUZZ_GUEST_SECONDS
#                         (default 600 here, 60 in test-rdma); part of make fuzz
#   make rdma-demo        (make demo) tests/rdma/demo.py: two guests, 1 % loss
#                         (seeded; DEMO_LOSS=5% or 0.05), per mode (go-back-N,
#                         selective repeat) an rdmacp of a DEMO_SIZE file with
#                         checksums on both sides and a 64 MiB rdma_bw WRITE
#                         memory to memory; one table of both modes, RESULT
#   make bench-rdma       bench/rdma/rdma_sweep.py: rdma_bw / rdma_lat sweeps
#                         (2 B..8 MiB, loss 0/0.1/1/5 %, GBN vs SR, MTU 1024
#                         vs 4096) -> bench/results/rdma-{bw,lat}.csv, .png,
#                         rdma-ceiling.csv (the link ceiling, same guests),
#                         rdma-perf.txt, rdma-summary.md
#   make bench-qp         bench/rdma/qp_scale.py: goodput and CPU per frame with
#                         1..256 busy QPs and 1 busy + N-1 idle -> bench/results/qp-scale.*
#   make bench-ab         bench/rdma/ab_compare.py: BASE=<rev> against this tree,
#                         the same workloads, alternating -> ab-compare.txt
#   make bench-rxe        bench/rdma/rxe_compare.py: xv6 rdma_bw beside Linux
#                         rxe's perftest on one lossy link -> rxe-compare.*
#   make bench-lat        bench/rdma/lat_matrix.py: rdma_lat beside perftest's
#                         ib_*_lat (WRITE/SEND/READ x 2 B/256 B/4 KiB x polling/
#                         sleeping), same link, alternating -> lat-matrix.*
#   make bench-msgrate    bench/rdma/msgrate.py: rdma_bw's message rate 2 B..4 KiB
#                         (WRITE/SEND/READ, polling/sleeping) beside rxe's
#                         perftest and the small-frame RoCE ceiling -> msgrate.*
#   make bench-frames     bench/tcg/frame_cost.py: the guests' instructions,
#                         memory accesses and TCG block lookups per frame, the
#                         RoCE ceiling's burst beside a 64 KiB WRITE, counted by
#                         a QEMU plugin (bench/tcg/tbcount.c) -> frame-cost.md
#
# Guest transcripts go to tests/logs/rdmatest-cpusN.log and rdmanet-*.log.
# Include from the top Makefile: include tests/rdma/rdma.mk

test-rdma: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_all.py

test-rdma-quick: kernel/kernel fs.img
	python3 tests/rdma/run_rdmatest.py --quick

test-rdma-examples: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_examples.py

test-rdma-udping: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_udping.py

test-rdma-rping: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_rping.py

test-rdma-udaddy: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_udaddy.py

test-rdma-perftest-r: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_perftest_r.py

# make fuzz (kernel/transport/transport.mk) runs the guest fuzzer too.
FUZZ_GUEST_SECONDS ?= 600
fuzz-guest: kernel/kernel fs.img
	FUZZ_GUEST_SECONDS=$(FUZZ_GUEST_SECONDS) python3 tests/rdma/run_hostile.py
fuzz: fuzz-guest

bench-rdma: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/rdma/rdma_sweep.py

# xv6's rdma_bw (go-back-N and selective repeat) beside Linux rxe's perftest
# on one link, alternating, at 0/1/5 % loss, at path MTU 4096 (9000-byte
# link) and 1024 (1500-byte link) -> bench/results/rxe-compare.*
# and the rxe section of rdma-summary.md (make bench runs it after bench-rdma).
bench-rxe: kernel/kernel fs.img $(LINKEMU) linux-image
	$(PLOT_PYTHON) bench/rdma/rxe_compare.py

# Small-message rate: xv6's rdma_bw (polling and -e) beside Linux rxe's
# ib_write_bw / ib_send_bw / ib_read_bw and the RoCE ceiling of 64-byte
# payloads, three rounds (medians) -> bench/results/msgrate.{csv,md,png};
# MSGRATE_ARGS=--full for every power of two up to 4 KiB.
bench-msgrate: kernel/kernel fs.img $(LINKEMU) linux-image
	$(PLOT_PYTHON) bench/rdma/msgrate.py $(MSGRATE_ARGS)

# perftest -R in every pairing of xv6 and Linux rxe (rxe-rxe, xv6-xv6,
# xv6-rxe, rxe-xv6) on one link: ib_write_bw / ib_send_lat -R beside xv6's
# rdma_bw / rdma_lat -R, ratios against rxe-rxe -> bench/results/perftest-pairs.*
bench-pairs: kernel/kernel fs.img $(LINKEMU) linux-image
	python3 bench/rdma/perftest_pairs.py

# N = 1..256 busy QPs (rdma_bw -q) and 1 busy + N-1 idle: goodput and guest
# CPU per frame -> bench/results/qp-scale.{csv,png,md}.
bench-qp: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/rdma/qp_scale.py
.PHONY: bench-qp

# The latency matrix beside rxe's perftest -> bench/results/lat-matrix.* and
# the "Latency matrix" section of rdma-summary.md (LAT_ARGS="--quick" checks it).
LAT_ARGS ?=
test-rdma-rmem-client: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_rmem_client.py

test-rdma-rmem-paging: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_rmem_paging.py

bench-rmem-paging: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/rdma/rmem_paging.py

bench-lat: kernel/kernel fs.img $(LINKEMU) linux-image
	$(PLOT_PYTHON) bench/rdma/lat_matrix.py $(LAT_ARGS)

# The QEMU plugin that counts the guests' work per translated block.
TBCOUNT := $(BUILD)/tcg/tbcount.so
$(TBCOUNT): bench/tcg/tbcount.c
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC -o $@ $< -lpthread

bench-frames: kernel/kernel fs.img $(LINKEMU) $(TBCOUNT)
	python3 bench/tcg/frame_cost.py --plugin $(TBCOUNT)

.PHONY: test-rdma-rmem-client test-rdma-rmem-paging bench-rmem-paging
.PHONY: test-rdma test-rdma-quick test-rdma-examples test-rdma-udping test-rdma-rping test-rdma-udaddy test-rdma-perftest-r fuzz-guest bench-rdma bench-rxe bench-msgrate bench-pairs bench-lat bench-frames rdma-demo

DEMO_SIZE ?= 16777216
rdma-demo: kernel/kernel fs.img $(LINKEMU)
	DEMO_SIZE=$(DEMO_SIZE) python3 tests/rdma/demo.py

# The same RDMA workloads on two builds in one run (ABBA rounds): BASE, a git
# revision built in build/ab/<sha>, against the working tree. Prints medians
# and new/base -> bench/results/ab-compare.{txt,log}. BASE=HEAD~3 ROUNDS=4.
bench-ab: kernel/kernel fs.img $(LINKEMU)
	python3 bench/rdma/ab_compare.py
.PHONY: bench-ab
