# vm/: boot Debian kernels (vm/kernels.json) in QEMU and run a payload in each.
VM_OUT := $(OUT)/vm
VM := $(VM_OUT)/vm
VM_JOBS ?= $(shell nproc)
VM_GOBUILD := CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w -buildid='
# Real-boot integration tests use one small kernel; override with VM_IT_KERNEL=<id>.
VM_IT_KERNEL ?= 7.3-arm64

.PHONY: vm-deps vm-build vm-test vm-matrix vm-bench
vm-deps: ## install QEMU (x86 and arm), dpkg-deb and cpio for the VM runner
	scripts/vm-deps.sh

vm-build: ## build out/vm/vm, the guest inits out/vm/vm-linux-{amd64,arm64} and the probe payload
	cd vm && $(VM_GOBUILD) -o $(VM) ./cmd/vm
	cd vm && for a in amd64 arm64; do \
	  GOARCH=$$a $(VM_GOBUILD) -o $(VM_OUT)/vm-linux-$$a ./cmd/vm && \
	  GOARCH=$$a $(VM_GOBUILD) -o $(VM_OUT)/probe/$$a/abiprobe ./cmd/abiprobe; done

vm-test: ## VM runner unit tests, then real boots of one kernel (normal, guest timeout, watchdog; ~1 min)
	cd vm && CGO_ENABLED=0 go test -count=1 ./...
	cd vm && VM_IT_KERNEL=$(VM_IT_KERNEL) CGO_ENABLED=0 go test -count=1 -tags vmintegration -timeout 8m -run Integration -v ./internal/runner

vm-matrix: vm-build ## boot every kernel of the default matrix with the ABI probe payload and print the table
	$(VM) run --jobs $(VM_JOBS) --payload $(VM_OUT)/probe/{arch} -- /payload/abiprobe

vm-bench: vm-build ## matrix wall time, per-boot time and suite/bare-boot ratio
	scripts/vm-bench.sh $(VM) $(VM_OUT)/probe/{arch} /payload/abiprobe

DEPS_TARGETS += vm-deps
TEST_TARGETS += vm-test

# conformance/ owns `make matrix` once it sets MATRIX_OWNER (its mk file sorts before this one). Until then the
# matrix is the ABI probe.
ifndef MATRIX_OWNER
MATRIX_OWNER := vm
matrix: vm-matrix
endif
