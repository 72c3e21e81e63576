# Go: go.work's go line is the toolchain every module is built and tested with. `make deps` installs it into
# $(CACHE)/go where the go on PATH is missing or older (scripts/go-deps.sh, from the Go module proxy); that
# directory, when it exists, comes first on PATH for every target.
export PATH := $(CACHE)/go/bin:$(PATH)

.PHONY: go-deps
go-deps: ## install Go >= go.work's go line into $(CACHE)/go if the go on PATH is missing or older (Go module proxy)
	scripts/go-deps.sh $(CACHE)

# First: bazel-deps and the module downloads of the others run go.
DEPS_TARGETS := go-deps $(DEPS_TARGETS)
