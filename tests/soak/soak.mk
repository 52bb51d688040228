# tests/soak/soak.mk: the soak (tests/soak/run_soak.py, tests/soak/README.md).
#
#   make soak        SOAK_MINUTES (default 30) of rdmasoak between two xv6
#                    guests and the opcode matrix between xv6 and the Linux
#                    guest, the link's impairment changing and processes
#                    killed on a seeded schedule (SOAK_SEED); every byte
#                    checked, every guest's resources back at the end
#   make test-soak   the same for 3 minutes (a suite of make test)
#
# Include from the top Makefile (after tests/linux/linux.mk): include tests/soak/soak.mk

SOAK_MINUTES ?= 30
SOAK_SEED ?= 1
SOAK_DEPS := kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)

soak: deps $(SOAK_DEPS)
	python3 tests/soak/run_soak.py --minutes $(SOAK_MINUTES) --seed $(SOAK_SEED)

test-soak: deps $(SOAK_DEPS)
	python3 tests/soak/run_soak.py --minutes 3 --seed $(SOAK_SEED)

.PHONY: soak test-soak
