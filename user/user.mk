# user/user.mk: builds the user-space C library and every user program.
#
# Included by the top-level Makefile. Defines UPROGS (the binaries that
# kernel/kernel.mk installs into fs.img, with the leading '_' stripped) and
# the rules that build them with the RISC-V cross compiler. user/README.md
# says what each folder holds: lib/c (the C library), lib/ibverbs (verbs),
# lib/rdmacm (connection manager), bin (the tools), tests (guest test
# programs), examples. Objects go under $(BUILD)/user, mirroring the folders;
# the programs are user/_<name> whatever folder their source is in.
# $(BUILD)/user/lib/c/usys.S is generated from the SYS_* lines of kernel/lib/uapi.h
# by user/lib/c/gen_usys.py, so a new syscall needs no stub by hand.
#
#   make user-progs     build every program in UPROGS
#   make user-clean     remove generated files and objects

U_TOOLPREFIX = $(if $(TOOLPREFIX),$(TOOLPREFIX),riscv64-unknown-elf-)
U_CC      = $(U_TOOLPREFIX)gcc
U_LD      = $(U_TOOLPREFIX)ld
U_OBJDUMP = $(U_TOOLPREFIX)objdump
U_AR      = $(U_TOOLPREFIX)ar
U_OBJDIR  := $(BUILD)/user

U_CFLAGS := -Wall -Werror -O2 -g -std=gnu11 \
  -march=rv64gc -mabi=lp64d -mcmodel=medany \
  -ffreestanding -fno-builtin -nostdlib -fno-common \
  -fno-stack-protector -fno-pie -fno-omit-frame-pointer \
  -I. -Iuser/lib/c -Iuser/lib/ibverbs -Iuser/lib/rdmacm -Iuser/include -MMD -MP
U_LDFLAGS := -nostdlib -z max-page-size=4096 --no-relax -T user/user.ld

# The C library every program links against: crt0 (first on every link
# line) and the archive ulib.a, last, so a program takes only the members
# whose symbols it uses.
U_CRT0 := $(U_OBJDIR)/lib/c/crt0.o
U_LIB_A := $(U_OBJDIR)/ulib.a
U_LIB_SRCS := $(filter-out user/lib/c/crt0.c,$(wildcard user/lib/c/*.c))
U_LIB_OBJS := $(patsubst user/%.c,$(U_OBJDIR)/%.o,$(U_LIB_SRCS)) \
  $(U_OBJDIR)/lib/c/usys.o
U_LIB := $(U_CRT0) $(U_LIB_A)
$(U_LIB_A): $(U_LIB_OBJS)
	rm -f $@
	$(U_AR) rcs $@ $^

# Programs built from one source file each: user/bin/<name>.c -> user/_<name>.
U_SIMPLE_PROGS := init sh cat echo grep wc ls mkdir rm ln kill halt free status rmemctl

# The guest test runner (testrun.c) that usertests, rdmatest and rdmahostile
# share.
U_TESTRUN_OBJ := $(U_OBJDIR)/tests/testrun.o

# usertests is one file per tested module plus the list of their tables.
U_USERTESTS_SRCS := $(wildcard user/tests/usertests/*.c)
U_USERTESTS_OBJS := $(patsubst user/%.c,$(U_OBJDIR)/%.o,$(U_USERTESTS_SRCS)) $(U_TESTRUN_OBJ)

UPROGS := $(addprefix user/_,$(U_SIMPLE_PROGS)) user/_usertests

# Guest test programs of one source file, with only the C library.
U_PLAIN_TESTS := memtouch
UPROGS += $(addprefix user/_,$(U_PLAIN_TESTS))
$(addprefix user/_,$(U_PLAIN_TESTS)): user/_%: $(U_OBJDIR)/tests/%.o $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_LIB_A)
.SECONDARY: $(patsubst %,$(U_OBJDIR)/tests/%.o,$(U_PLAIN_TESTS))

# Network tools (network helper): ping, UDP echo, the guest side of tests/net.
U_NET_PROGS := ping udpecho nettest
UPROGS += $(addprefix user/_,$(U_NET_PROGS))
.SECONDARY: $(patsubst %,$(U_OBJDIR)/bin/%.o,$(U_NET_PROGS))

# RDMA programs, tools (user/bin) and tests (user/tests): each links the verbs
# library (lib/ibverbs), the connection manager's client (lib/rdmacm: the CM
# itself runs in the kernel) and the perftest-like helpers of rdma_bw and
# rdma_lat (bin/rdma_perf.c, and bin/perftest_cm.c: their -R) besides the libc.
U_RDMA_BIN := rdma_bw rdma_lat rdmacp rdmastat udping rping udaddy atomcount
U_RDMA_TESTS := rdmatest rdmanet_test rdmahostile rdmafuzz rdmacmtest rdmasoak srqtest
U_RDMA_PROGS := $(U_RDMA_BIN) $(U_RDMA_TESTS)
U_RDMA_LIB_OBJS := $(patsubst user/%.c,$(U_OBJDIR)/%.o,$(wildcard user/lib/ibverbs/*.c \
  user/lib/rdmacm/*.c) user/bin/rdma_perf.c user/bin/perftest_cm.c)
UPROGS += $(addprefix user/_,$(U_RDMA_PROGS))
$(addprefix user/_,$(U_RDMA_BIN)): user/_%: $(U_OBJDIR)/bin/%.o $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RDMA_LIB_OBJS) $(U_LIB_A)
$(addprefix user/_,$(U_RDMA_TESTS)): user/_%: $(U_OBJDIR)/tests/%.o $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RDMA_LIB_OBJS) $(U_EXTRA_OBJS) $(U_LIB_A)
# The RDMA test programs link the shared test runner too.
U_TESTRUN_PROGS := user/_rdmatest user/_rdmahostile user/_rdmacmtest user/_srqtest
$(U_TESTRUN_PROGS): U_EXTRA_OBJS := $(U_TESTRUN_OBJ)
$(U_TESTRUN_PROGS): $(U_TESTRUN_OBJ)
.SECONDARY: $(U_TESTRUN_OBJ) $(U_RDMA_LIB_OBJS) $(patsubst %,$(U_OBJDIR)/bin/%.o,$(U_RDMA_BIN)) \
  $(patsubst %,$(U_OBJDIR)/tests/%.o,$(U_RDMA_TESTS))

# The rdma_cm examples (user/examples, docs/rdma.md): one program a file.
U_EXAMPLES := $(patsubst user/examples/%.c,%,$(wildcard user/examples/*.c))
UPROGS += $(addprefix user/_,$(U_EXAMPLES))
$(addprefix user/_,$(U_EXAMPLES)): user/_%: $(U_OBJDIR)/examples/%.o $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RDMA_LIB_OBJS) $(U_LIB_A)
.SECONDARY: $(patsubst %,$(U_OBJDIR)/examples/%.o,$(U_EXAMPLES))

# Remote memory (docs/rmem.md): the memory node rmemd, librmem (user/lib/rmem)
# over the verbs and rdma_cm libraries, and the programs that use it. The
# protocol's codec is the kernel's own file (kernel/rmem/rmem_wire.c), built
# here with the user flags; tests/rdma/rmem.mk builds the same sources for Linux.
U_RMEM_OBJS := $(U_OBJDIR)/lib/rmem/rmem.o $(U_OBJDIR)/lib/rmem/rmem_wire.o
U_RMEM_PROGS := rmemd rmem_bench rmemtest rmem_example
UPROGS += $(addprefix user/_,$(U_RMEM_PROGS))
$(U_OBJDIR)/lib/rmem/rmem_wire.o: kernel/rmem/rmem_wire.c kernel/rmem/rmem_wire.h
	@mkdir -p $(dir $@)
	$(U_CC) $(U_CFLAGS) -c -o $@ $<
user/_rmemd user/_rmem_bench: user/_%: $(U_OBJDIR)/bin/%.o $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB_A)
user/_rmemtest: $(U_OBJDIR)/tests/rmemtest.o $(U_TESTRUN_OBJ) $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_TESTRUN_OBJ) $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB_A)
user/_rmem_example: $(U_OBJDIR)/lib/rmem/example.o $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RMEM_OBJS) $(U_RDMA_LIB_OBJS) $(U_LIB_A)
.SECONDARY: $(U_RMEM_OBJS) $(U_OBJDIR)/bin/rmemd.o $(U_OBJDIR)/bin/rmem_bench.o \
  $(U_OBJDIR)/tests/rmemtest.o $(U_OBJDIR)/lib/rmem/example.o

# librdmacm's own examples, unmodified, fetched from Debian at build time.
include user/upstream/upstream.mk

$(U_OBJDIR)/lib/c/usys.S: kernel/lib/uapi.h user/lib/c/gen_usys.py
	@mkdir -p $(dir $@)
	python3 user/lib/c/gen_usys.py kernel/lib/uapi.h > $@.tmp && mv $@.tmp $@

$(U_OBJDIR)/lib/c/usys.o: $(U_OBJDIR)/lib/c/usys.S
	$(U_CC) $(U_CFLAGS) -c -o $@ $<

$(U_OBJDIR)/%.o: user/%.c
	@mkdir -p $(dir $@)
	$(U_CC) $(U_CFLAGS) -c -o $@ $<

user/_%: $(U_OBJDIR)/bin/%.o $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_LIB_A)
	$(U_OBJDUMP) -S $@ > $(U_OBJDIR)/bin/$*.asm

user/_usertests: $(U_USERTESTS_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $(U_USERTESTS_OBJS) $(U_LIB_A)

# Keep objects: they are reused by the next build.
.SECONDARY: $(U_LIB_OBJS) $(patsubst %,$(U_OBJDIR)/bin/%.o,$(U_SIMPLE_PROGS))

user-progs: $(UPROGS)

# kernel.mk is included before this file, so its "fs.img: $(UPROGS)" sees
# an empty list at parse time; restate the dependency here so a changed
# program rebuilds the image.
fs.img: $(UPROGS)

user-clean:
	rm -rf $(U_OBJDIR) $(UPROGS)

-include $(wildcard $(U_OBJDIR)/lib/*/*.d $(U_OBJDIR)/cm/*.d $(U_OBJDIR)/bin/*.d \
  $(U_OBJDIR)/tests/*.d $(U_OBJDIR)/tests/usertests/*.d $(U_OBJDIR)/examples/*.d \
  $(U_OBJDIR)/upstream/*.d)

CLEAN_TARGETS += user-clean
.PHONY: user-progs user-clean
