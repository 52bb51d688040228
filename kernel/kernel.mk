# kernel/kernel.mk: build rules for the kernel, the host mkfs and fs.img,
# and the QEMU run targets. Included by the top-level Makefile.
#
#   make kernel/kernel    the kernel ELF (objects in build/kernel/)
#   make fs.img           file system image with $(UPROGS) installed in /
#   make qemu             boot interactively (CPUS=N, default 3)
#   make qemu-gdb         same, waiting for gdb on tcp::26000
# QEMU and QEMUOPTS are reused by the test harness.

TOOLPREFIX ?= riscv64-unknown-elf-
K_CC      := $(TOOLPREFIX)gcc
K_OBJDUMP := $(TOOLPREFIX)objdump
K_BUILD   := $(BUILD)/kernel
K_CFLAGS  := -Wall -Werror -O2 -g -march=rv64gc -mabi=lp64d -mcmodel=medany \
             -ffreestanding -fno-common -nostdlib -fno-builtin-printf \
             -fno-stack-protector -fno-pie -no-pie -fno-omit-frame-pointer \
             -fno-tree-loop-distribute-patterns -MD -MP -Ikernel \
             -DRCT_HOT_SECTION
# Link-time optimization: gcc inlines across files (the transport core's
# small helpers into the kernel's per-frame paths; docs/kernel.md,
# "Link-time optimization"). klib.c stays out: gcc emits calls to memset
# and memcpy on its own after LTO has settled which symbols exist, so they
# must come from an ordinary object.
K_LTO     := -flto=auto
K_LDFLAGS := -nostdlib -Wl,-z,max-page-size=4096 -T kernel/kernel.ld
K_ASFLAGS := -march=rv64gc -mabi=lp64d -Ikernel

# Sources: the boot files in kernel/ and every file of the layer folders
# (docs/kernel.md lists the layers; tests/kernel/layers.py checks them).
# The sans-IO transport core is linked in with the kernel's flags (objects
# in build/kernel/transport/, same pattern rule).
K_DIRS    := sys rmem rdma net proc fs dev core cm transport lib
K_C_SRCS  := $(wildcard kernel/*.c) $(foreach d,$(K_DIRS),$(wildcard kernel/$(d)/*.c))
K_S_SRCS  := $(wildcard kernel/*.S) $(foreach d,$(K_DIRS),$(wildcard kernel/$(d)/*.S))
K_OBJS    := $(patsubst kernel/%.S,$(K_BUILD)/%.o,$(K_S_SRCS)) \
             $(patsubst kernel/%.c,$(K_BUILD)/%.o,$(K_C_SRCS))

$(K_BUILD)/%.o: kernel/%.c kernel/kernel.mk
	@mkdir -p $(dir $@)
	$(K_CC) $(K_CFLAGS) $(K_LTO) -c -o $@ $<

$(K_BUILD)/lib/klib.o: K_LTO :=

$(K_BUILD)/%.o: kernel/%.S kernel/kernel.mk
	@mkdir -p $(dir $@)
	$(K_CC) $(K_ASFLAGS) -c -o $@ $<

# libgcc supplies what gcc may call on its own (byte swaps, sub-word atomics).
# Expanded where the link recipe runs (=, not :=), after the deps step.
K_LIBGCC = $(shell $(K_CC) -march=rv64gc -mabi=lp64d -print-libgcc-file-name)

# Relink when the set of objects changes, not only when one is newer.
K_OBJLIST := $(K_BUILD)/objects.list
$(shell mkdir -p $(K_BUILD); echo '$(K_OBJS)' | cmp -s - $(K_OBJLIST) || echo '$(K_OBJS)' > $(K_OBJLIST))

kernel/kernel: $(K_OBJS) kernel/kernel.ld $(K_OBJLIST)
	$(K_CC) $(K_CFLAGS) $(K_LTO) $(K_LDFLAGS) -o $@ $(K_OBJS) $(K_LIBGCC)
	$(K_OBJDUMP) -S $@ > $(K_BUILD)/kernel.asm

-include $(K_OBJS:.o=.d)

# Host tool: builds the file system image.
K_MKFS := $(BUILD)/mkfs
$(K_MKFS): tools/mkfs.c kernel/lib/fs_format.h kernel/lib/uapi.h
	@mkdir -p $(dir $@)
	gcc -Wall -Werror -O2 -Ikernel -o $@ tools/mkfs.c

fs.img: $(K_MKFS) $(UPROGS)
	$(K_MKFS) fs.img $(UPROGS)

# ---- QEMU ----
QEMU ?= qemu-system-riscv64
K_DISK ?= fs.img
QEMUOPTS = -machine virt -bios none -kernel kernel/kernel -m 128M -smp $(CPUS) -nographic \
           -global virtio-mmio.force-legacy=false \
           -drive file=$(K_DISK),if=none,format=raw,id=disk0 \
           -device virtio-blk-device,drive=disk0,bus=virtio-mmio-bus.0 \
           -device virtio-rng-device,bus=virtio-mmio-bus.7 \
           $(if $(BOOTARGS),-append "$(BOOTARGS)")

qemu: kernel/kernel fs.img
	$(QEMU) $(QEMUOPTS)

qemu-gdb: kernel/kernel fs.img
	@echo "*** gdb: target remote localhost:26000"
	$(QEMU) $(QEMUOPTS) -S -gdb tcp::26000

kernel-clean:
	rm -f kernel/kernel

CLEAN_TARGETS += kernel-clean
.PHONY: qemu qemu-gdb kernel-clean
