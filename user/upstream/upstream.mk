# user/upstream/upstream.mk: librdmacm's own example programs, unmodified
# (included by user/user.mk; docs/rdma.md, "Upstream examples, unmodified").
#
# rdma-core's librdmacm/examples/rdma_server.c and rdma_client.c are fetched
# from Debian's rdma-core source package by user/upstream/fetch.sh into
# build/upstream/ (apt with private state under build/apt/, hashes checked
# as apt checks them) and compiled with the project's user headers and
# libraries exactly as user/examples/*.c are, to the programs rdma_server and
# rdma_client in fs.img. The download happens once: the two files are the
# stamp, so `make` works offline afterwards (until `make clean`).
#
#   make upstream-src   fetch the two files only

UPSTREAM_DIR := $(BUILD)/upstream
UPSTREAM_PROGS := rdma_server rdma_client
UPSTREAM_SRCS := $(patsubst %,$(UPSTREAM_DIR)/%.c,$(UPSTREAM_PROGS))

# One run of the script makes both files (a grouped target).
$(UPSTREAM_SRCS) &: user/upstream/fetch.sh
	bash user/upstream/fetch.sh $(UPSTREAM_DIR)

upstream-src: $(UPSTREAM_SRCS)

$(U_OBJDIR)/upstream/%.o: $(UPSTREAM_DIR)/%.c
	@mkdir -p $(dir $@)
	$(U_CC) $(U_CFLAGS) -c -o $@ $<

UPROGS += $(addprefix user/_,$(UPSTREAM_PROGS))
$(addprefix user/_,$(UPSTREAM_PROGS)): user/_%: $(U_OBJDIR)/upstream/%.o $(U_RDMA_LIB_OBJS) $(U_LIB) user/user.ld
	$(U_LD) $(U_LDFLAGS) -o $@ $(U_CRT0) $< $(U_RDMA_LIB_OBJS) $(U_LIB_A)
.SECONDARY: $(patsubst %,$(U_OBJDIR)/upstream/%.o,$(UPSTREAM_PROGS)) $(UPSTREAM_SRCS)

.PHONY: upstream-src
