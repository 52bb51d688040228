# tests/linux/linux.mk: the Linux Soft-RoCE guest (included by the top Makefile).
#
#   make linux-image       build/linux/bzImage and build/linux/initrd.img from
#                          Debian packages (tests/linux/build_image.sh; the
#                          .debs are cached in build/linux/debs). Rebuilt when
#                          the script, /init or a file under build/linux/overlay/
#                          (the peer program) changes.
#   make test-linux-guest  one xv6 and two Linux guests on linkemu: ping,
#                          rxe0 ACTIVE, ib_write_bw between the Linux guests
#                          (tests/linux/check_guest.py). Not part of make test.
#
# By hand: python3 tests/net/launch.py --guests 1 --linux 1 (docs/network.md).

LINUX_OUT := $(BUILD)/linux
LINUX_IMAGE := $(LINUX_OUT)/bzImage $(LINUX_OUT)/initrd.img
LINUX_OVERLAY_FILES := $(shell find $(LINUX_OUT)/overlay -type f 2>/dev/null)
LINUX_GUEST_ARGS ?=

# One run of the script makes both files (a grouped target).
$(LINUX_IMAGE) &: tests/linux/build_image.sh tests/linux/init tests/linux/linux.mk \
    $(LINUX_OVERLAY_FILES)
	bash tests/linux/build_image.sh

linux-image: deps $(LINUX_IMAGE)

test-linux-guest: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/linux/check_guest.py $(LINUX_GUEST_ARGS)

.PHONY: linux-image test-linux-guest
