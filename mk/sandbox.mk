# sandbox/: the confine launcher.
CONFINE := $(OUT)/confine

.PHONY: confine sandbox-test sandbox-fuzz sandbox-bench
confine: ## build the launcher for the host into out/confine (static, stripped)
	cd sandbox && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o $(CONFINE) ./cmd/confine

sandbox-test: ## launcher unit tests and host-kernel integration tests
	cd sandbox && CGO_ENABLED=0 go test -count=1 ./...

sandbox-fuzz: ## fuzz the flag parser (FUZZTIME, default 60s)
	cd sandbox && go test -run='^$$' -fuzz=FuzzParse -fuzztime=$${FUZZTIME:-60s} ./internal/cli

sandbox-bench: confine ## confine -- /bin/true against bare /bin/true, as a ratio, and the binary size
	scripts/bench-launcher.sh $(CONFINE)

TEST_TARGETS += sandbox-test
