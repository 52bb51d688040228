# tests/interop/interop.mk: xv6-rdma against Linux Soft-RoCE (rdma_rxe).
#
#   make test-interop   tests/interop/run_interop.py: one xv6 guest and one
#                       Linux guest (tests/linux/) on a linkemu link; the
#                       opcode x size matrix both ways (rxe requester -> xv6
#                       responder, xv6 requester -> rxe responder) at path
#                       MTU 1024 and 4096, clean and at 1 % seeded loss; a
#                       bw smoke run each way and the capture check (ICRC
#                       of every RoCEv2 frame, tshark finds nothing
#                       malformed) on the clean MTU 1024 bed; UD between
#                       xv6's udping and xrpeer both ways, clean (capture
#                       checked) and at 1 % loss (beds ud_xv6, ud_xv6_loss1),
#                       and between xrpeer ud-client and ud-server in the
#                       Linux guest (bed ud_linux, rxe loopback); SENDs into
#                       shared receive queues both ways, clean and at 1 %
#                       loss (beds srq, srq_loss1); the
#                       memory node and librmem across the stacks (beds
#                       rmem, rmem_loss1: rmemd on Linux with xv6 clients,
#                       rmemd on xv6 with Linux clients); a 48M xv6 guest
#                       paging to rmemd on Linux (beds rmem_paging,
#                       rmem_paging_loss1: memtouch at twice its free
#                       memory, one and two processes); the
#                       exactly-once atomic counter xv6 -> rxe and rxe -> xv6
#                       at 0, 1 and 5 % loss (beds atomic_xv6-rxe,
#                       atomic_rxe-xv6, tests/rdma/run_atomic.py); ends with
#                       "N passed, M failed". INTEROP_ARGS passes options
#                       (e.g. --only mtu1024 --keep-capture DIR).
#
#   make test-ud-vectors   tests/vectors/check_ud_vectors.py: the host test of
#                       the real Linux UD frames in tests/vectors/ud/ (no
#                       guest; ends with "N passed, M failed").
#
#   make test-cm-vectors   tests/vectors/check_cm_vectors.py: tshark's CM
#                       dissector reads every CM MAD of the Linux rdma_cm
#                       captures in tests/vectors/cm/ clean, in the order
#                       the README lists, and cm/fields.json still holds
#                       what it reads (no guest; "N passed, M failed").
#
# The Linux image (make linux-image) carries xrpeer from build/linux/overlay/
# (tests/linux/peer/peer.mk). Part of make test (TEST_SUITES).
# Include from the top Makefile: include tests/interop/interop.mk

INTEROP_ARGS ?=

# The image carries the peer: rebuild it when xrpeer changes (linux.mk finds
# the overlay's files only if they exist when make starts).
$(LINUX_INITRD): $(XRPEER)

test-interop: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/interop/run_interop.py $(INTEROP_ARGS)

test-ud-vectors:
	python3 tests/vectors/check_ud_vectors.py

test-cm-vectors:
	python3 tests/vectors/check_cm_vectors.py

.PHONY: test-interop test-ud-vectors test-cm-vectors
