# proto-spec/spec.mk: `make test-spec` = SPIN model checks + rule traceability.
#
# Every property of proto-spec/model/rc.pml is generated (spin -a), compiled
# and run in $(SPEC_BUILD)/<property>/ by proto-spec/model/spin-check.sh,
# which prints states stored, depth reached and time, and fails on any error
# or incomplete search. The *-broken properties are negative tests: they must
# report an error. Then trace.py prints the rule traceability report, strict:
# a live rule that no test cites fails the target. spec-vectors checks the
# wire rules against the rxe captures (model/vectors_check.py).
#
# Budgets (SPEC_B_*) bound the losses, duplications, reorderings (shared by
# both directions) and premature timeouts one run may contain; see
# proto-spec/model/README.md for the measured sizes of larger budgets.

SPEC_DIR      := proto-spec
SPEC_MODEL    := $(SPEC_DIR)/model/rc.pml
SPEC_CHECK    := $(SPEC_DIR)/model/spin-check.sh
SPEC_BUILD    := $(BUILD)/spec
SPEC_PY       ?= python3
SPEC_CC       ?= gcc
SPEC_MEMLIM   ?= 3500
# Budgets per run (losses / duplications / reorderings / premature timeouts)
SPEC_B_SAFE   ?= -DMAXLOSS=2 -DMAXDUP=1 -DMAXREORD=1 -DMAXSPUR=1
SPEC_B_REORD  ?= -DMAXLOSS=2 -DMAXDUP=1 -DMAXREORD=2 -DMAXSPUR=0
SPEC_B_LIVE   ?= -DMAXLOSS=2 -DMAXDUP=1 -DMAXREORD=1 -DMAXSPUR=0
SPEC_B_BROKEN ?= -DMAXLOSS=1 -DMAXDUP=1 -DMAXREORD=1 -DMAXSPUR=1
SPEC_CCSAFE   := -DSAFETY -DMEMLIM=$(SPEC_MEMLIM)
SPEC_CCLIVE   := -DNFAIR=3 -DMEMLIM=$(SPEC_MEMLIM)
SPEC_PANSAFE  := -m100000
SPEC_PANLIVE  := -m100000 -a -f

# name | expected verdict | spin -D flags | cc flags | pan flags [| model, default rc.pml]
SPEC_PROPS := gbn-safety sr-safety gbn-reorder sr-reorder gbn-liveness sr-liveness \
              gbn-broken sr-broken sr-broken-read \
              ibcm-safety ibcm-reorder ibcm-broken-dup ibcm-broken-rtu \
              atomic-safety atomic-broken-dup
SPEC_gbn-safety   := pass|$(SPEC_B_SAFE)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-safety    := pass|-DSR $(SPEC_B_SAFE)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_gbn-reorder  := pass|$(SPEC_B_REORD)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-reorder   := pass|-DSR $(SPEC_B_REORD)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_gbn-liveness := pass|-DLIVENESS $(SPEC_B_LIVE)|$(SPEC_CCLIVE)|$(SPEC_PANLIVE)
SPEC_sr-liveness  := pass|-DSR -DLIVENESS $(SPEC_B_LIVE)|$(SPEC_CCLIVE)|$(SPEC_PANLIVE)
SPEC_gbn-broken   := fail|-DBROKEN_DUPWRITE $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-broken    := fail|-DSR -DBROKEN_DUPWRITE $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-broken-read := fail|-DSR -DBROKEN_SR_READ_EARLY $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
# The IB CM's races (model/ibcm.pml): duplicate REQ, REQ retried after REP, lost RTU, crossing DREQs.
SPEC_IBCM     := $(SPEC_DIR)/model/ibcm.pml
SPEC_ibcm-safety     := pass|$(SPEC_B_SAFE)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_IBCM)
SPEC_ibcm-reorder    := pass|$(SPEC_B_REORD)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_IBCM)
SPEC_ibcm-broken-dup := fail|-DBROKEN_NO_DUP $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_IBCM)
SPEC_ibcm-broken-rtu := fail|-DBROKEN_NO_RTU $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_IBCM)

# Atomics exactly once (model/atomic.pml): loss, duplication, premature retransmission.
SPEC_ATOMIC   := $(SPEC_DIR)/model/atomic.pml
SPEC_atomic-safety     := pass|$(SPEC_B_SAFE)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_ATOMIC)
SPEC_atomic-broken-dup := fail|-DBROKEN_DUP_EXEC $(SPEC_B_BROKEN)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)|$(SPEC_ATOMIC)

SPEC_VECTORS  ?= $(VECTORS_DIR)

# One suite: the SPIN runs, the vector rules and the traceability check, then
# "test-spec: N passed, M failed" (tests/harness/suite.py).
test-spec:
	@python3 tests/harness/suite.py test-spec -- "$(MAKE) --no-print-directory spec-models" \
	  "$(MAKE) --no-print-directory spec-vectors" "$(MAKE) --no-print-directory spec-trace"

spec-models:
	@command -v spin >/dev/null || { echo "spec: spin not installed"; exit 1; }
	@mkdir -p $(SPEC_BUILD)
	@echo "spec: models $(SPEC_MODEL) $(SPEC_IBCM) $(SPEC_ATOMIC): $(words $(SPEC_PROPS)) SPIN runs"
	@fail=0; nfail=0; n=0; total=$(words $(SPEC_PROPS)); \
	for spec in $(foreach p,$(SPEC_PROPS),"$(p)|$(SPEC_$(p))"); do \
	  oifs=$$IFS; IFS='|'; set -- $$spec; IFS=$$oifs; \
	  name=$$1; expect=$$2; dflags=$$3; ccflags=$$4; panflags=$$5; model=$${6:-$(SPEC_MODEL)}; \
	  n=$$((n+1)); echo "spec: [$$n/$$total] $$name: spin $$dflags; pan $$panflags (expect $$expect)"; \
	  SPEC_CC="$(SPEC_CC)" bash $(SPEC_CHECK) "$$name" "$$expect" $(SPEC_BUILD) \
	    $$model "$$dflags" "$$ccflags" "$$panflags" || { fail=1; nfail=$$((nfail+1)); }; \
	done; \
	if [ $$fail = 0 ]; then echo "spec: all SPIN properties gave the expected verdict"; \
	else echo "spec: SPIN verification FAILED"; fi; \
	echo "spec-models: $$((total - nfail)) passed, $$nfail failed"; exit $$fail

# The spec's byte-level rules against the real rxe captures.
spec-vectors:
	@echo "spec: wire rules against the rxe captures in $(SPEC_VECTORS)"; \
	out=$$($(SPEC_PY) $(SPEC_DIR)/model/vectors_check.py $(SPEC_VECTORS)); rc=$$?; \
	echo "$$out" | grep -E 'FAIL|frames,|passed,|no pcap|missing'; exit $$rc

spec-trace:
	@echo "spec: traceability report (strict: every live rule cited by a test)"
	@$(SPEC_PY) $(SPEC_DIR)/trace.py --quiet --strict

spec-clean:
	rm -rf $(SPEC_BUILD)

CLEAN_TARGETS += spec-clean
.PHONY: test-spec spec-models spec-vectors spec-trace spec-clean
