# proto-spec/spec.mk: make test-spec (SPIN model checks + rule traceability).
# First draft: traceability only; the SPIN runs are added with the model.
SPEC_DIR := proto-spec
SPEC_BUILD := $(BUILD)/spec
SPEC_PY ?= python3

test-spec:
	@echo "spec: traceability report (non-strict)"
	@$(SPEC_PY) $(SPEC_DIR)/trace.py --quiet

spec-clean:
	rm -rf $(SPEC_BUILD)

CLEAN_TARGETS += spec-clean
.PHONY: test-spec spec-clean
