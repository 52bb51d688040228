# tests/linux/peer/peer.mk: builds xrpeer, the Linux-side (libibverbs)
# peer of the xv6 RDMA tools, on the host into the Linux guest's overlay
# (build/linux/overlay/ is copied into its initramfs root), so the guest
# runs it from /usr/local/bin. Needs libibverbs-dev and librdmacm-dev
# (tests/deps.sh).
#
#   make xrpeer        build/linux/overlay/usr/local/bin/xrpeer
#
# Include from the top Makefile: include tests/linux/peer/peer.mk

XRPEER := $(BUILD)/linux/overlay/usr/local/bin/xrpeer
XRPEER_SRC := $(wildcard tests/linux/peer/*.c)
XRPEER_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Werror -Iuser/lib/ibverbs   # ud_payload.h, matrix_atomic.h

$(XRPEER): $(XRPEER_SRC) tests/linux/peer/peer.h user/lib/ibverbs/ud_payload.h user/lib/ibverbs/matrix_atomic.h
	@mkdir -p $(dir $@)
	gcc $(XRPEER_CFLAGS) -o $@ $(XRPEER_SRC) -lrdmacm -libverbs

xrpeer: $(XRPEER)

.PHONY: xrpeer
