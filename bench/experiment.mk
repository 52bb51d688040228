# bench/experiment.mk: experiments described in a file (bench/experiment.py,
# docs/experiments.md).
#
#   make experiment EXP=experiments/loss-sweep.toml [EXP_ARGS="--out DIR"]
#                         every workload at every level of the file, with
#                         repeats, through linkemu or the netem box ->
#                         build/experiments/NAME/ (runs.csv, summary.md, *.png);
#                         Ctrl-C keeps the finished runs, the same command
#                         resumes. The netem box needs the Linux image (built
#                         first when the file says medium = "netem" or
#                         peer = "linux").
#   bench/experiment_bench.py DIR   an experiment's cells beside make bench-rdma's
#   make test-experiment  a two-cell experiment through linkemu, stopped and
#                         resumed; its CSV, summary and plots, and its
#                         counters against linkemu's (15-45 s; a step of
#                         make test-net)

EXP ?= experiments/smoke.toml
EXP_ARGS ?=
# The Linux image: for the netem box (medium = "netem" or a list with it, or
# EXP_ARGS says --medium netem) and for a workload with peer = "linux".
EXP_NEEDS := $(if $(or $(shell grep -s '^medium *=.*"netem"\|^peer *= *\[*.*"linux"' $(EXP)),$(findstring netem,$(EXP_ARGS))),$(LINUX_IMAGE))

experiment: kernel/kernel fs.img $(LINKEMU) $(EXP_NEEDS)
	$(PLOT_PYTHON) bench/experiment.py $(EXP) $(EXP_ARGS)

test-experiment: kernel/kernel fs.img $(LINKEMU)
	$(PLOT_PYTHON) bench/experiment_test.py

.PHONY: experiment test-experiment
