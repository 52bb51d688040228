# tests/rdma/rdma.mk: in-guest tests of the RDMA verbs layer and transport.
#
#   make test-rdma        rdmatest (loopback self-test of every opcode and
#                         error path) in a 1-CPU and a 3-CPU guest, then the
#                         two-guest RoCEv2 test over linkemu (0 % and 1 %
#                         loss, rdmanet_test and rdmacp), then a smoke run
#                         of rdma_bw / rdma_lat (two guests and loopback)
#   make test-rdma-quick  rdmatest -q (no 1 MiB transfers) in one guest
#   make rdma-demo        (make demo) tests/rdma/demo.py: two guests, 1 % loss
#                         (seeded), rdmacp of a DEMO_SIZE file, checksums on
#                         both sides, a summary of rate and counters
#   make bench-rdma       rdma_bw / rdma_lat, all sizes, two guests and
#                         loopback -> bench/results/rdma-perf.txt
#
# Guest transcripts go to tests/logs/rdmatest-cpusN.log and rdmanet-*.log.
# Include from the top Makefile: include tests/rdma/rdma.mk

TEST_RDMA_CPUS ?= 1 3

test-rdma: kernel/kernel fs.img $(LINKEMU)
	@set -e; for c in $(TEST_RDMA_CPUS); do \
	  echo "=== rdmatest, $$c cpus"; python3 tests/rdma/run_rdmatest.py --cpus $$c; done
	@echo "=== rdmanet_test + rdmacp, two guests"; python3 tests/rdma/run_rdmanet.py
	@echo "=== rdma_bw / rdma_lat smoke, two guests and loopback"; python3 tests/rdma/run_perf.py --smoke

test-rdma-quick: kernel/kernel fs.img
	python3 tests/rdma/run_rdmatest.py --quick

bench-rdma: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_perf.py --out bench/results/rdma-perf.txt

.PHONY: test-rdma test-rdma-quick bench-rdma rdma-demo

DEMO_SIZE ?= 4194304
rdma-demo: kernel/kernel fs.img $(LINKEMU)
	DEMO_SIZE=$(DEMO_SIZE) python3 tests/rdma/demo.py
