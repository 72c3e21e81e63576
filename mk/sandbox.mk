# sandbox/: the confine launcher.
CONFINE := $(OUT)/confine
# gotestsum prints the closing count of tests and skips; it comes from the Go module proxy.
GOTESTSUM := go run gotest.tools/gotestsum@v1.13.0

# make sandbox-bench BENCH_BASELINE=path/to/older/confine adds that build to the same run.
BENCH_RUNS ?= 40
BENCH_ROUNDS ?= 7
BENCH_BASELINE ?=

.PHONY: confine sandbox-deps sandbox-test sandbox-fuzz sandbox-bench
sandbox-deps: ## install npm and python3-pip for the --profile acceptance tests (npm install, pip install), python3-venv, python3-pytest, less and gnupg for the conformance workloads family, and bubblewrap for the bwrap backend's
	scripts/sandbox-deps.sh

confine: ## build the launcher for the host into out/confine (static, stripped)
	cd sandbox && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o $(CONFINE) ./cmd/confine

sandbox-test: confine ## launcher unit tests and host-kernel integration tests, as root and as nobody (skips are counted and say why)
	cd sandbox && $(GOTESTSUM) --format testname -- -count=1 ./...
	scripts/sandbox-test-nobody.sh $(CONFINE)
	cd sandbox && go vet ./... && go vet -tags wsl2 ./... && GOARCH=arm64 go vet ./...
	# The WSL2 artifact's own package tests: detection, and the interop closure's mount layer (as root).
	cd sandbox && go test -count=1 -tags wsl2 ./launch/ ./seccomp/

sandbox-fuzz: ## fuzz the flag parser, the report's JSON string encoder and the .git/commondir parsers (FUZZTIME each, default 60s)
	cd sandbox && go test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$${FUZZTIME:-60s} ./internal/cli
	cd sandbox && go test -run='^$$' -fuzz=FuzzParseConfig -fuzztime=$${FUZZTIME:-60s} ./internal/cli
	cd sandbox && go test -run='^$$' -fuzz=FuzzAppendString -fuzztime=$${FUZZTIME:-60s} ./report
	cd sandbox && go test -run='^$$' -fuzz=FuzzParseGitFile -fuzztime=$${FUZZTIME:-60s} ./gitdir
	cd sandbox && go test -run='^$$' -fuzz=FuzzParseCommonDir -fuzztime=$${FUZZTIME:-60s} ./gitdir

sandbox-bench: confine ## launch cost paired in one run: confine vs a Go exec floor, bwrap and a go-landlock launcher, as root and nobody; size
	scripts/bench-launcher.sh $(CONFINE) $(BENCH_RUNS) $(BENCH_ROUNDS) $(BENCH_BASELINE)

TEST_TARGETS += sandbox-test
DEPS_TARGETS += sandbox-deps
