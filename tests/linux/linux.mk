# tests/linux/linux.mk: the Linux Soft-RoCE guest (included by the top Makefile).
#
#   make linux-image       build/linux/bzImage and build/linux/initrd.img from
#                          Debian packages (tests/linux/build_image.sh; the
#                          .debs are cached in build/linux/debs). Rebuilt when
#                          the script, /init or a file under build/linux/overlay/
#                          (the peer program) changes; an overlay change
#                          only re-packs the overlay's archive (a second).
#                          `LINUX_REFRESH=1 bash tests/linux/build_image.sh`
#                          takes apt's current package versions.
#   make test-linux-guest  one xv6 and two Linux guests on linkemu: ping,
#                          rxe0 ACTIVE, ib_write_bw between the Linux guests,
#                          Linux's rping, ucmatose and udaddy between them
#                          over the IB CM and a REJ for a port nobody
#                          listens on; xrpeer's matrix and bw roles over
#                          rdma_cm; then two xv6 guests through the Linux
#                          netem box (tests/linux/check_guest.py, ~60 s;
#                          19 checks).
#                          LINUX_GUEST_ARGS="--only mixed|box". Not in make test.
#
# By hand: python3 tests/net/launch.py --guests 1 --linux 1 (docs/network.md).

LINUX_OUT := $(BUILD)/linux
LINUX_KERNEL := $(LINUX_OUT)/bzImage
LINUX_INITRD := $(LINUX_OUT)/initrd.img
LINUX_IMAGE := $(LINUX_KERNEL) $(LINUX_INITRD)
# The files and directories under the overlay when make starts (a removed
# file changes its directory's time stamp). A fragment that builds a
# file into the overlay in the same run names it itself, in a rule of its
# own (works whatever the include order):
#     $(LINUX_INITRD): $(LINUX_OUT)/overlay/usr/local/bin/PROGRAM
LINUX_OVERLAY_FILES := $(shell find $(LINUX_OUT)/overlay 2>/dev/null)
LINUX_GUEST_ARGS ?=

# One run of the script makes both files (a grouped target).
$(LINUX_IMAGE) &: tests/linux/build_image.sh tests/linux/init tests/linux/linux.mk \
    $(LINUX_OVERLAY_FILES)
	bash tests/linux/build_image.sh

linux-image: deps $(LINUX_IMAGE)

test-linux-guest: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/linux/check_guest.py $(LINUX_GUEST_ARGS)

.PHONY: linux-image test-linux-guest
