# tests/rdma/rmem.mk: remote memory (docs/rmem.md): its tests, its Linux
# build and its benchmark. Included by the top Makefile.
#
#   make test-rdma-rmem   tests/rdma/run_rmem.py: rmemd on one xv6 guest,
#                         rmemtest / rmem_example on another, 0 and 1 % loss;
#                         a server restart; a client too many (a step of
#                         test-rdma)
#   make rmem-linux       rmemd, rmem_bench and rmem_example built from the
#                         same sources against the host's rdma-core
#                         (libibverbs-dev, librdmacm-dev) into the Linux
#                         guest's overlay (build/linux/overlay/usr/local/bin)
#   make bench-rmem       bench/rdma/rmem_bench.py: rmem_bench xv6 <-> xv6,
#                         go-back-N and selective repeat at 0/1/5 % loss ->
#                         bench/results/rmem-bench.{csv,md,png}

RMEM_LINUX_BIN := $(BUILD)/linux/overlay/usr/local/bin
RMEM_LINUX_PROGS := $(RMEM_LINUX_BIN)/rmemd $(RMEM_LINUX_BIN)/rmem_bench $(RMEM_LINUX_BIN)/rmem_example
RMEM_LINUX_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -I.
RMEM_LINUX_LIB := user/lib/rmem/rmem.c kernel/rmem/rmem_wire.c
RMEM_LINUX_HDRS := user/lib/rmem/rmem.h kernel/rmem/rmem_wire.h

$(RMEM_LINUX_BIN)/rmemd: user/bin/rmemd.c kernel/rmem/rmem_wire.c kernel/rmem/rmem_wire.h
	@mkdir -p $(@D)
	gcc $(RMEM_LINUX_CFLAGS) -o $@ $< kernel/rmem/rmem_wire.c -lrdmacm -libverbs

$(RMEM_LINUX_BIN)/rmem_bench: user/bin/rmem_bench.c $(RMEM_LINUX_LIB) $(RMEM_LINUX_HDRS)
	@mkdir -p $(@D)
	gcc $(RMEM_LINUX_CFLAGS) -o $@ $< $(RMEM_LINUX_LIB) -lrdmacm -libverbs

$(RMEM_LINUX_BIN)/rmem_example: user/lib/rmem/example.c $(RMEM_LINUX_LIB) $(RMEM_LINUX_HDRS)
	@mkdir -p $(@D)
	gcc $(RMEM_LINUX_CFLAGS) -o $@ $< $(RMEM_LINUX_LIB) -lrdmacm -libverbs

rmem-linux: $(RMEM_LINUX_PROGS)

# The Linux image carries them (tests/linux/linux.mk: a fragment names the
# overlay files it builds).
$(LINUX_INITRD): $(RMEM_LINUX_PROGS)

test-rdma-rmem: kernel/kernel fs.img $(LINKEMU)
	python3 tests/rdma/run_rmem.py

.PHONY: rmem-linux test-rdma-rmem

bench-rmem: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/rdma/rmem_bench.py

.PHONY: bench-rmem
