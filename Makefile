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
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

deps: $(DEPS_TARGETS) ## install everything the tests need (apt packages, Go modules)

test: deps $(TEST_TARGETS) ## install what the tests need (deps), then run every test (unit, host integration, bounded VM boots)
