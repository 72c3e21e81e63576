# confine: the front door. `make help` lists the targets.
#
# Each concern adds its own rules in mk/<concern>.mk and appends to:
#   DEPS_TARGETS  - installers run by `make deps` (idempotent, fetch into caches git ignores)
#   TEST_TARGETS  - what `make test` runs, in order
SHELL := /bin/bash
.DEFAULT_GOAL := help
.SHELLFLAGS := -euo pipefail -c

export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false
CACHE ?= $(HOME)/.cache/confine
OUT ?= $(CURDIR)/out
export CACHE OUT

DEPS_TARGETS :=
TEST_TARGETS :=

include $(sort $(wildcard mk/*.mk))

.PHONY: help deps test matrix
help: ## list the targets, then the variables that tune them
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort | \
		sed -e 's|\$$(CACHE)|$(CACHE)|g' -e 's|\$$(SMOKE_KERNELS)|$(SMOKE_KERNELS)|g'
	@printf '\nvariables (make VAR=value TARGET):\n'
	@grep -hE '^#> ' $(MAKEFILE_LIST) | sed -E 's/^#> /  /' 

deps: $(DEPS_TARGETS) ## install everything the tests need (apt packages, Go modules)

# Each test target runs even when one before it failed (a CI run reports every failure at once); deps failing
# skips them all. The last line is the count of test targets, "N passed, N failed, N skipped"; the Bazel server
# that bazel-test started is shut down, so nothing of the run stays behind.
test: ## install what the tests need (deps), then run every test (unit, host integration, bounded VM boots); ends with "N passed, N failed, N skipped"
	@passed=0 failed=0 skipped=0 failures= start=$$(date +%s); \
	if ! $(MAKE) --no-print-directory deps; then \
	  failed=1 failures=" deps" skipped=$(words $(TEST_TARGETS)); \
	else \
	  for t in $(TEST_TARGETS); do \
	    s=$$(date +%s); \
	    if $(MAKE) --no-print-directory $$t; then passed=$$((passed + 1)); r=passed; \
	    else failed=$$((failed + 1)); failures="$$failures $$t"; r=FAILED; fi; \
	    echo "make test: $$t $$r ($$(($$(date +%s) - s)) s)"; \
	  done; \
	  tools/bazel shutdown >/dev/null 2>&1 || echo "make test: tools/bazel shutdown failed: a Bazel server may still run" >&2; \
	fi; \
	echo "make test: $$(($$(date +%s) - start)) s$${failures:+; failed:$$failures}"; \
	echo "$$passed passed, $$failed failed, $$skipped skipped"; \
	[ "$$failed" -eq 0 ]
