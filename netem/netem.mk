# netem/netem.mk: the impairment engine and linkemu (included by the top Makefile).
#
#   make netem/linkemu     build the real-time relay ($(LINKEMU))
#   make test-linkemu      host-only test: UDP sockets through linkemu (no guests)
#
# Variables other fragments use: LINKEMU (the binary), NETEM_IMPAIR_SRC,
# NETEM_CFLAGS. Objects go to $(BUILD)/netem/.

NETEM_DIR := netem
NETEM_CC ?= gcc
NETEM_CFLAGS := -std=c99 -O2 -g -Wall -Wextra -Werror=implicit-function-declaration
NETEM_IMPAIR_SRC := $(NETEM_DIR)/impair.c
NETEM_IMPAIR_HDR := $(NETEM_DIR)/impair.h
LINKEMU := $(BUILD)/netem/linkemu
LINKEMU_SRC := $(NETEM_DIR)/linkemu.c $(NETEM_DIR)/linkemu_ctl.c $(NETEM_IMPAIR_SRC)
LINKEMU_HDR := $(NETEM_DIR)/linkemu.h $(NETEM_IMPAIR_HDR)

$(LINKEMU): $(LINKEMU_SRC) $(LINKEMU_HDR) $(NETEM_DIR)/netem.mk
	@mkdir -p $(dir $@)
	$(NETEM_CC) $(NETEM_CFLAGS) -D_GNU_SOURCE -o $@ $(LINKEMU_SRC) -lm

# Convenience name: `make netem/linkemu`.
netem/linkemu: $(LINKEMU)
.PHONY: netem/linkemu

test-linkemu: $(LINKEMU)
	@python3 $(NETEM_DIR)/tests/test_linkemu.py $(LINKEMU)
.PHONY: test-linkemu

clean-netem:
	rm -rf $(BUILD)/netem
.PHONY: clean-netem
CLEAN_TARGETS += clean-netem
