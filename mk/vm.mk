# vm/: boot Debian kernels (vm/kernels.json) in QEMU and run a payload in each.
VM_OUT := $(OUT)/vm
VM := $(VM_OUT)/vm
VM_JOBS ?= $(shell nproc)
VM_GOBUILD := CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w -buildid='
# Real-boot integration tests use one small kernel; override with VM_IT_KERNEL=<id>. The OCI test (a loopback
# docker-registry, from make vm-deps) boots 7.3-amd64 and 7.3-arm64 from their .debs and from their images, an
# import-file kernel and an unlabelled image of 5.10-arm64 (no Landlock: a skip).
VM_IT_KERNEL ?= 7.3-arm64

.PHONY: vm-deps vm-build vm-test vm-matrix vm-bench kernels-oci
vm-deps: ## install QEMU (x86 and arm), dpkg-deb, cpio and docker-registry for the VM runner
	scripts/vm-deps.sh

# The guest init is the vm binary itself (PID 1 runs the supervisor): one static build per arch, and the host's copy
# is out/vm/vm.
vm-build: ## build out/vm/vm, the guest inits out/vm/vm-linux-{amd64,arm64} and the probe payload
	cd vm && for a in amd64 arm64; do \
	  GOARCH=$$a $(VM_GOBUILD) -o $(VM_OUT)/vm-linux-$$a ./cmd/vm && \
	  GOARCH=$$a $(VM_GOBUILD) -o $(VM_OUT)/probe/$$a/abiprobe ./cmd/abiprobe || exit 1; done
	cp $(VM_OUT)/vm-linux-$$(go env GOARCH) $(VM).tmp && mv -f $(VM).tmp $(VM)

vm-test: ## VM runner unit tests, then real boots: one kernel (normal, guest timeout, watchdog) and the OCI round trip (6 boots)
	cd vm && CGO_ENABLED=0 go test -count=1 ./...
	cd vm && VM_IT_KERNEL=$(VM_IT_KERNEL) CGO_ENABLED=0 go test -count=1 -tags vmintegration -timeout 20m -run Integration -v ./internal/runner

# The probe's results go to their own directory: reports/vm holds the conformance matrix's.
vm-matrix: vm-deps vm-build ## boot every kernel of the default matrix with the ABI probe payload and print the table
	$(VM) run --jobs $(VM_JOBS) --results reports/vm-probe --payload $(VM_OUT)/probe/{arch} -- /payload/abiprobe

vm-bench: vm-deps vm-build ## matrix wall time, per-boot time and suite/bare-boot ratio (boots every kernel twice)
	scripts/vm-bench.sh $(VM) $(VM_OUT)/probe/{arch} /payload/abiprobe

# Not part of `make test`: two full matrices under TCG take minutes.
kernels-oci: vm-deps vm-build ## import the default matrix into a loopback registry, run it from there and from the .debs, compare
	scripts/kernels-oci.sh $(VM) reports/vm-oci $(VM_OUT)/probe/{arch} /payload/abiprobe

DEPS_TARGETS += vm-deps
TEST_TARGETS += vm-test

# conformance/ owns `make matrix` once it sets MATRIX_OWNER (its mk file sorts before this one). Until then the
# matrix is the ABI probe. Either way QEMU is installed (vm-deps) before any VM boots, so `make matrix` works on a
# fresh machine.
ifndef MATRIX_OWNER
MATRIX_OWNER := vm
matrix: vm-matrix
endif
matrix: vm-deps
