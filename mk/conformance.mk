# conformance/: the named security cases, run against a real confine binary on the host kernel and in the VM
# kernel matrix, and the kernel × case report gated by conformance/expected.yaml.
CONFORMANCE := $(OUT)/confine-conformance
CONFORMANCE_GOBUILD := CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid='
PAYLOAD := $(OUT)/payload
# Kernel ids whose binfmt_misc.ko go into the payload (comma-separated; empty: every kernel of vm/kernels.json).
PAYLOAD_KERNELS ?=
REPORTS ?= reports
# Race power (issue 27): each race case with a measured win rate against its planted bug (conformance/race-rates.json,
# measured by `make conformance-mutants MUTANTS_MEASURE=N`) gets, per column, the attempts that catch that bug
# with probability RACE_POWER: n = ceil(ln(1 - RACE_POWER) / ln(1 - p)), p the rate's 95 % lower bound. The host
# keeps at least HOST_TOCTOU_ATTEMPTS. A race case without a measured rate runs the fixed *_TOCTOU_ATTEMPTS
# (its power is reported as unknown; metadata-swap counts them as racing calls, 50 per launch). `make matrix-full`
# asks RELEASE_RACE_POWER. make test's smoke run caps every race case at SMOKE_TOCTOU_ATTEMPTS (bounded time; the
# power it reaches is reported).
RACE_RATES := conformance/race-rates.json
RACE_POWER ?= 0.999
RELEASE_RACE_POWER ?= 0.999999
HOST_TOCTOU_ATTEMPTS ?= 2000
MATRIX_TOCTOU_ATTEMPTS ?= 200
SMOKE_TOCTOU_ATTEMPTS ?= 50
MUTANTS_MEASURE ?= 0
# The most attempts a race case gets in a VM column: the matrix never runs a race case longer than the fixed
# count did before its power was computed (gitfile-swap's bug wins 1 of 150 attempts under TCG: 99.9 % would take
# thousands; the power reached is reported instead), and the release matrix at most the host's count.
MATRIX_RACE_MAX ?= $(MATRIX_TOCTOU_ATTEMPTS)
RELEASE_RACE_MAX ?= $(HOST_TOCTOU_ATTEMPTS)
# The VM smoke run in `make test`: the kernel without Landlock and the newest, amd64.
SMOKE_KERNELS ?= 5.10-amd64,7.3-amd64
MATRIX_OWNER := conformance
# Extra `vm run` flags for `make matrix`, e.g. MATRIX_FLAGS="--shard 2/4" or "--arch amd64". A selection of
# kernel entries (--kernels, --kernel, --shard, or with one dash, as Go flags allow) turns the plan off, since
# the column that stands for another may not run; --arch keeps it (arch is one of every case's dimensions, so no
# column stands for one of the other arch).
MATRIX_FLAGS ?=
#> MATRIX_FLAGS="--kernels 6.1-amd64,7.3-arm64"  make matrix on a subset (vm kernels lists the ids; also --arch A, --shard i/n):
#>                          the report then says SUBSET PASSED, NOT THE GATE, and names the absent kernel entries;
#>                          --kernels and --shard run every case in every column they select, --arch keeps the plan
#> VM_JOBS=N                VMs at once (default: nproc); each gets 2 vCPUs when there are 2 cores per job, else 1
#> MATRIX_GUEST_TIMEOUT=40m the guest's backstop for one kernel entry's payload (both users' passes); a boot runs a kernel's entries one after the other
#> MATRIX_CASE_TIMEOUT=3m   a case that goes this long without a command finishing is killed and FAILs
#> RACE_POWER=0.999         each race case's probability of catching its planted bug, per column (conformance/race-rates.json)
#> MATRIX_TOCTOU_ATTEMPTS=200  attempts of a race case without a measured win rate; MATRIX_RACE_MAX (default the same) caps the others
#> RELEASE_RACE_POWER=0.999999  make matrix-full's race power per column, at most RELEASE_RACE_MAX (2000) attempts
#> SMOKE_KERNELS=5.10-amd64,7.3-amd64  the kernel entries make test's smoke run boots (conformance-smoke)
#> MUTANTS_MEASURE=N        make conformance-mutants first measures the race win rates with N attempts (MUTANTS_RECORD=1 records them)

.PHONY: conformance-build conformance-test conformance-host payload matrix matrix-full matrix-report conformance-smoke conformance-mutants
conformance-build: ## build the conformance runner for the host into out/confine-conformance, and beside it the helper it runs under confine
	cd conformance && $(CONFORMANCE_GOBUILD) -o $(CONFORMANCE) ./cmd/confine-conformance && \
	  $(CONFORMANCE_GOBUILD) -o $(CONFORMANCE)-helper ./cmd/confine-conformance-helper

conformance-test: ## conformance unit tests: catalogue drift (CASES.md), expectations, report, CI workflow
	cd conformance && CGO_ENABLED=0 go test -count=1 ./...

conformance-host: confine conformance-build ## run every case on the host kernel (as root, and as nobody when root; again with --backend bwrap where bwrap is installed), gate on expected.yaml
	scripts/conformance-host.sh $(CONFINE) $(CONFORMANCE) $(REPORTS)/host $(HOST_TOCTOU_ATTEMPTS) $(RACE_RATES) $(RACE_POWER)

# The VMs run the launchers of record (Bazel's, `make build`), so the matrix's confine sha256 is the shipped one's
# and `confine-release gate` can tie the report to the release. The ABI-capped columns (kernels.json abi_cap) run
# confine-abicap instead: the same source built with -tags confine_abicap, a test build that is never shipped. The
# host-emulation columns (kernels.json host_emulation) run the shipped launcher under a seccomp filter the runner
# installs on itself (VM_HOST_EMULATION; `confine-conformance --host-emulation NAME` on the host). The WSL2
# launcher of record (confine-wsl2) runs the wsl-interop family against a simulated Windows interop.
payload: build vm-build ## Bazel's linux and WSL2 launchers, the confine_abicap test launcher, confine-conformance and its helper (+ expected.yaml) for amd64 and arm64 into out/payload/<arch>/
	for a in amd64 arm64; do \
	  mkdir -p $(PAYLOAD)/$$a && cp -f dist/bin/linux_$$a/confine $(PAYLOAD)/$$a/confine && \
	  cp -f dist/bin/wsl2_$$a/confine $(PAYLOAD)/$$a/confine-wsl2 && \
	  (cd sandbox && GOARCH=$$a $(CONFORMANCE_GOBUILD) -tags confine_abicap -o $(PAYLOAD)/$$a/confine-abicap ./cmd/confine) && \
	  (cd conformance && GOARCH=$$a $(CONFORMANCE_GOBUILD) -o $(PAYLOAD)/$$a/confine-conformance ./cmd/confine-conformance && \
	    GOARCH=$$a $(CONFORMANCE_GOBUILD) -o $(PAYLOAD)/$$a/confine-conformance-helper ./cmd/confine-conformance-helper) && \
	  cp conformance/expected.yaml $(RACE_RATES) vm/kernels.json $(PAYLOAD)/$$a/ || exit 1; \
	done
	scripts/payload-binfmt-modules.sh $(VM) $(PAYLOAD) $(PAYLOAD_KERNELS)

# The matrix installs what it builds and boots with first (Go, Bazel's chroot and its host commands, QEMU and the
# archive keyring the kernel fetches trust), so that it works on a fresh machine without make deps.
matrix: go-deps bazel-deps vm-deps payload vm-build conformance-build ## the gate: boot every kernel of vm/kernels.json, run the suite in each as root and as nobody where the plan says a case can differ (confine-conformance plan), race power RACE_POWER; MATRIX_FLAGS="--kernels ID,…" runs a subset (reported as one, every case in it; --arch A keeps the plan)
	PLAN=$(if $(filter --kernel% -kernel% --shard% -shard%,$(MATRIX_FLAGS)),,1) RACE_POWER=$(RACE_POWER) RACE_MAX=$(MATRIX_RACE_MAX) scripts/conformance-matrix.sh $(VM) $(PAYLOAD) $(CONFORMANCE) $(REPORTS) $(MATRIX_TOCTOU_ATTEMPTS) $(VM_JOBS) $(MATRIX_FLAGS)

matrix-full: go-deps bazel-deps vm-deps payload vm-build conformance-build ## the release's matrix: every case in every column (no plan), race power RELEASE_RACE_POWER
	PLAN= RACE_POWER=$(RELEASE_RACE_POWER) RACE_MAX=$(RELEASE_RACE_MAX) scripts/conformance-matrix.sh $(VM) $(PAYLOAD) $(CONFORMANCE) $(REPORTS) $(MATRIX_TOCTOU_ATTEMPTS) $(VM_JOBS) $(MATRIX_FLAGS)

matrix-report: conformance-build ## the kernel × case report from existing reports/vm results (e.g. merged CI shards)
	$(CONFORMANCE) report --results $(REPORTS)/vm --manifest vm/kernels.json --expect conformance/expected.yaml --out $(REPORTS) --require-complete

# The smoke run's payload needs the modules of its own kernels only: a fresh machine's make test downloads two
# kernel packages, not every one of the manifest.
conformance-smoke: PAYLOAD_KERNELS = $(SMOKE_KERNELS)
conformance-smoke: payload vm-build conformance-build ## the suite in two VM kernels ($(SMOKE_KERNELS)), bounded, for make test
	PLAN= RACE_POWER=$(RACE_POWER) RACE_MAX=$(SMOKE_TOCTOU_ATTEMPTS) scripts/conformance-matrix.sh $(VM) $(PAYLOAD) $(CONFORMANCE) $(REPORTS)/smoke $(SMOKE_TOCTOU_ATTEMPTS) $(VM_JOBS) --kernels $(SMOKE_KERNELS)

conformance-mutants: confine conformance-build vm-build ## plant each bug of conformance/mutants/ and show which cases catch it, race cases at the gate's computed counts with their power; MUTANTS_MEASURE=N first measures the race win rates (MUTANTS_RECORD=1 records them)
	scripts/conformance-mutants.sh $(CONFINE) $(CONFORMANCE) $(VM) $(OUT)/mutants $(SMOKE_TOCTOU_ATTEMPTS) $(RACE_RATES) $(MUTANTS_MEASURE)

TEST_TARGETS += conformance-test conformance-host conformance-smoke
