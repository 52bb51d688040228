# proto-spec/spec.mk: `make test-spec` = SPIN model checks + rule traceability.
#
# Every property of proto-spec/model/rc.pml is generated (spin -a), compiled
# and run in $(SPEC_BUILD)/<property>/ by proto-spec/model/spin-check.sh,
# which prints states stored, depth reached and time, and fails on any error
# or incomplete search. The *-broken properties are negative tests: they must
# report an error. Then trace.py prints the rule traceability report
# (non-strict: rules without a test are warnings). spec-vectors checks the
# wire rules against the rxe captures (model/vectors_check.py).
#
# Budgets: SPEC_LOSS/SPEC_DUP/SPEC_REORDER bound the losses, duplications and
# reorderings the network may perform in one run (shared by both directions).

SPEC_DIR      := proto-spec
SPEC_MODEL    := $(SPEC_DIR)/model/rc.pml
SPEC_CHECK    := $(SPEC_DIR)/model/spin-check.sh
SPEC_BUILD    := $(BUILD)/spec
SPEC_PY       ?= python3
SPEC_CC       ?= gcc
SPEC_MEMLIM   ?= 3500
SPEC_LOSS     ?= 2
SPEC_DUP      ?= 1
SPEC_REORDER  ?= 2
SPEC_LLOSS    ?= 2
SPEC_BUDGET   := -DMAXLOSS=$(SPEC_LOSS) -DMAXDUP=$(SPEC_DUP) -DMAXREORD=$(SPEC_REORDER)
SPEC_LBUDGET  := -DMAXLOSS=$(SPEC_LLOSS) -DMAXDUP=1 -DMAXREORD=1
SPEC_CCSAFE   := -DSAFETY -DMEMLIM=$(SPEC_MEMLIM)
SPEC_CCLIVE   := -DNFAIR=3 -DMEMLIM=$(SPEC_MEMLIM)
SPEC_PANSAFE  := -m100000
SPEC_PANLIVE  := -m100000 -a -f

# name | expected verdict | spin -D flags | cc flags | pan flags
SPEC_PROPS := gbn-safety sr-safety gbn-liveness sr-liveness gbn-broken sr-broken
SPEC_gbn-safety   := pass|$(SPEC_BUDGET)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-safety    := pass|-DSR $(SPEC_BUDGET)|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_gbn-liveness := pass|-DLIVENESS $(SPEC_LBUDGET)|$(SPEC_CCLIVE)|$(SPEC_PANLIVE)
SPEC_sr-liveness  := pass|-DSR -DLIVENESS $(SPEC_LBUDGET)|$(SPEC_CCLIVE)|$(SPEC_PANLIVE)
SPEC_gbn-broken   := fail|-DBROKEN_DUPWRITE|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)
SPEC_sr-broken    := fail|-DSR -DBROKEN_DUPWRITE|$(SPEC_CCSAFE)|$(SPEC_PANSAFE)

SPEC_VECTORS  ?= $(firstword $(wildcard ../shared/vectors /work/shared/vectors))

test-spec: spec-models spec-vectors spec-trace

spec-models:
	@command -v spin >/dev/null || { echo "spec: spin not installed"; exit 1; }
	@mkdir -p $(SPEC_BUILD)
	@echo "spec: model $(SPEC_MODEL); budgets: safety $(SPEC_BUDGET), liveness $(SPEC_LBUDGET)"
	@fail=0; n=0; total=$(words $(SPEC_PROPS)); \
	for spec in $(foreach p,$(SPEC_PROPS),"$(p)|$(SPEC_$(p))"); do \
	  oifs=$$IFS; IFS='|'; set -- $$spec; IFS=$$oifs; \
	  name=$$1; expect=$$2; dflags=$$3; ccflags=$$4; panflags=$$5; \
	  n=$$((n+1)); echo "spec: [$$n/$$total] $$name: spin $$dflags; pan $$panflags (expect $$expect)"; \
	  SPEC_CC="$(SPEC_CC)" bash $(SPEC_CHECK) "$$name" "$$expect" $(SPEC_BUILD) \
	    $(SPEC_MODEL) "$$dflags" "$$ccflags" "$$panflags" || fail=1; \
	done; \
	if [ $$fail = 0 ]; then echo "spec: all SPIN properties gave the expected verdict"; \
	else echo "spec: SPIN verification FAILED"; exit 1; fi

# The spec's byte-level rules against the real rxe captures.
spec-vectors:
	@if [ -n "$(SPEC_VECTORS)" ] && [ -d "$(SPEC_VECTORS)" ]; then \
	  echo "spec: wire rules against the rxe captures in $(SPEC_VECTORS)"; \
	  out=$$($(SPEC_PY) $(SPEC_DIR)/model/vectors_check.py $(SPEC_VECTORS)); rc=$$?; \
	  echo "$$out" | grep -E 'FAIL|frames,|no pcap'; exit $$rc; \
	else echo "spec: no rxe captures found (SPEC_VECTORS), vectors check skipped"; fi

spec-trace:
	@echo "spec: traceability report (non-strict)"
	@$(SPEC_PY) $(SPEC_DIR)/trace.py --quiet

spec-clean:
	rm -rf $(SPEC_BUILD)

CLEAN_TARGETS += spec-clean
.PHONY: test-spec spec-models spec-vectors spec-trace spec-clean
