# tests/rdma/rdma.mk: in-guest tests of the RDMA verbs layer and transport.
#
#   make test-rdma        rdmatest (loopback self-test of every opcode and
#                         error path) in a 1-CPU and a 3-CPU guest, then the
#                         two-guest RoCEv2 test over linkemu (0 % and 1 %
#                         loss) when the network is available
#   make test-rdma-quick  rdmatest -q (no 1 MiB transfers) in one guest
#
# Guest transcripts go to tests/logs/rdmatest-cpusN.log and rdmanet-*.log.
# Include from the top Makefile: include tests/rdma/rdma.mk

TEST_RDMA_CPUS ?= 1 3

test-rdma: kernel/kernel fs.img
	@set -e; for c in $(TEST_RDMA_CPUS); do \
	  echo "=== rdmatest, $$c cpus"; python3 tests/rdma/run_rdmatest.py --cpus $$c; done
	@if [ -f tests/rdma/run_rdmanet.py ]; then \
	  echo "=== rdmanet_test, two guests"; python3 tests/rdma/run_rdmanet.py; fi

test-rdma-quick: kernel/kernel fs.img
	python3 tests/rdma/run_rdmatest.py --quick

.PHONY: test-rdma test-rdma-quick
