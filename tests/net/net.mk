# tests/net/net.mk: the two-guest network tests and the link benchmark.
#
#   make test-net        two guests through linkemu: ARP, ping both ways,
#                        UDP echo 1..8972 bytes (jumbo frames, also
#                        zero-copy), the netblast syscall and a kernel
#                        burst of 5,000 datagrams counted exactly,
#                        corrupted frames all dropped and
#                        counted, 10,000 datagrams each way over 5% loss
#                        checked against linkemu's counters, a process
#                        flooding its unread sockets while another's ping,
#                        UDP echo and rdmacp complete. 1-3 minutes.
#                        Ends "N passed, M failed". TEST_NET_ARGS="--quick"
#                        (sweep step 7), "--seed N", "--only loss".
#                        Then make test-experiment (bench/experiment.mk).
#   make test-netem      the loss experiment through real tc netem: two xv6
#                        guests bridged by a Linux guest with netem on both
#                        ports (tests/net/run_netem.py): the frames the QPs
#                        lost at 2 % against the binomial bounds and netem's
#                        own count, and the same through linkemu.
#                        ~3 minutes; builds the Linux image first (make
#                        linux-image). Part of make test.
#   make bench-netem     goodput at 1 % loss / clean, go-back-N and selective
#                        repeat, through netem and through linkemu (7 rounds
#                        each) -> bench/results/netem-compare.txt
#   make bench-net       link ceiling guest to guest (frames/s, MB/s at 64,
#                        1082, 1500, 4154, 9000-byte frames; kernel burst and
#                        sendto/recvfrom) and one-way latency ->
#                        bench/results/link-ceiling.csv (+ .png), link-latency.csv,
#                        link-summary.md
#
# By hand: python3 tests/net/launch.py --guests 2 --a2b "loss 1%" (see docs/network.md).

TEST_NET_ARGS ?=
BENCH_NET_ARGS ?=

test-net: kernel/kernel fs.img $(LINKEMU)
	@python3 tests/harness/suite.py test-net -- "python3 tests/net/test_net.py $(TEST_NET_ARGS)" \
	  "$(MAKE) --no-print-directory test-experiment"

test-netem: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/net/run_netem.py

bench-netem: kernel/kernel fs.img $(LINKEMU) $(LINUX_IMAGE)
	python3 tests/net/run_netem.py --compare

bench-net: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/net/link_ceiling.py $(BENCH_NET_ARGS)

.PHONY: test-net test-netem bench-netem bench-net
