# examples/: programs that embed confine, each its own module in go.work and a test of the route it shows.
.PHONY: examples-test
examples-test: ## the Go embedding example (examples/go-agent, package sandbox/reexec): confines a write as root and as nobody, with and without a mount layer; catches a planted mutant
	scripts/examples-test.sh

TEST_TARGETS += examples-test
