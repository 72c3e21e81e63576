# sandbox/: the confine launcher.
CONFINE := $(OUT)/confine
# gotestsum prints the closing count of tests and skips; it comes from the Go module proxy.
GOTESTSUM := go run gotest.tools/gotestsum@v1.13.0

.PHONY: confine sandbox-test sandbox-fuzz sandbox-bench
confine: ## build the launcher for the host into out/confine (static, stripped)
	cd sandbox && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o $(CONFINE) ./cmd/confine

sandbox-test: confine ## launcher unit tests and host-kernel integration tests, as root and as nobody (skips are counted and say why)
	cd sandbox && $(GOTESTSUM) --format testname -- -count=1 ./...
	scripts/sandbox-test-nobody.sh $(CONFINE)
	cd sandbox && go vet ./... && go vet -tags wsl2 ./... && GOARCH=arm64 go vet ./...

sandbox-fuzz: ## fuzz the flag parser (FUZZTIME, default 60s)
	cd sandbox && go test -run='^$$' -fuzz=FuzzParse -fuzztime=$${FUZZTIME:-60s} ./internal/cli

sandbox-bench: confine ## confine -- /bin/true against bare /bin/true, as a ratio, and the binary size
	scripts/bench-launcher.sh $(CONFINE)

TEST_TARGETS += sandbox-test
