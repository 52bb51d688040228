# tests/rdma/atomic.mk: remote atomics' exactly-once counter (user/bin/
# atomcount.c), its runner, its Linux build and the atomic bench. Included
# by the top Makefile after tests/linux/linux.mk.
#
#   make atomcount-linux   atomcount built from the same source against the
#                          host's rdma-core (libibverbs-dev, librdmacm-dev)
#                          into the Linux guest's overlay
#                          (build/linux/overlay/usr/local/bin)
#   make test-atomic       tests/rdma/run_atomic.py: the counter server on one
#                          guest, clients on the others, at 0, 1 and 5 % loss,
#                          FETCH_AND_ADD and COMPARE_AND_SWAP; the final value
#                          is exactly the number of completions and the values
#                          returned are 0 .. total-1 once each.
#                          ATOMIC_ARGS="--bed linux" (rxe <-> rxe, the
#                          reference), "--bed xv6" (xv6 <-> xv6), "--bed
#                          xv6-rxe" / "rxe-xv6" (server first); default all
#   make bench-atomic      bench/rdma/atomic_bench.py: atomic latency and rate,
#                          xv6 <-> xv6 (rdma_lat / rdma_bw -t atomic) beside
#                          rxe <-> rxe (perftest's ib_atomic_lat / ib_atomic_bw)
#                          in one run -> bench/results/atomic.{md,csv}

ATOMCOUNT_LINUX := $(BUILD)/linux/overlay/usr/local/bin/atomcount
ATOMIC_ARGS ?=

$(ATOMCOUNT_LINUX): user/bin/atomcount.c
	@mkdir -p $(@D)
	gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -o $@ $< -lrdmacm -libverbs

atomcount-linux: $(ATOMCOUNT_LINUX)

# The Linux image carries it (tests/linux/linux.mk: a fragment names the
# overlay files it builds).
$(LINUX_INITRD): $(ATOMCOUNT_LINUX)

test-atomic: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/rdma/run_atomic.py $(ATOMIC_ARGS)

bench-atomic: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	$(PLOT_PYTHON) bench/rdma/atomic_bench.py

.PHONY: atomcount-linux test-atomic bench-atomic
