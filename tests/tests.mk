# tests/tests.mk: the in-guest kernel test suite.
#
#   make test-kernel        build kernel/kernel and fs.img, boot with CPUS=1
#                           and then CPUS=3, run the shell/tool checks and
#                           usertests in each guest through tests/harness/,
#                           halt, and check that "halt 7" exits QEMU with 7.
#                           Fails on any failed test, timeout, panic or
#                           wrong QEMU status. Prints the boot-to-prompt
#                           time and ends with "N passed, M failed" (all
#                           runs summed).
#   make test-kernel-quick  the same with usertests -q (skips slow tests)
#
# Guest transcripts go to tests/logs/<guest>.log.

TEST_KERNEL_CPUS ?= 1 3
TEST_KERNEL_ARGS ?=

test-kernel: kernel/kernel fs.img
	python3 tests/harness/test_kernel.py --cpus $(TEST_KERNEL_CPUS) $(TEST_KERNEL_ARGS)

test-kernel-quick: kernel/kernel fs.img
	python3 tests/harness/test_kernel.py --cpus $(TEST_KERNEL_CPUS) --quick $(TEST_KERNEL_ARGS)

tests-clean:
	rm -rf tests/logs

CLEAN_TARGETS += tests-clean
.PHONY: test-kernel test-kernel-quick tests-clean
