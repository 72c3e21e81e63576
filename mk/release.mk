# release/: confine-release proves and ships what Bazel built (dist/bin, `make build`): verify, the VS Code
# and npm layouts, the OCI index, the conformance gate. goreleaser, crane and cyclonedx-gomod are Go tools
# pinned in release/tools/go.mod (its own module, outside go.work and .bazelignored).
CONFINE_RELEASE := $(OUT)/confine-release
RELEASE_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
# The commit the stamp must name; empty when HEAD is exactly a tag (then the stamp is the bare tag).
RELEASE_COMMIT ?= $(shell git describe --tags --exact-match >/dev/null 2>&1 || git rev-parse HEAD 2>/dev/null)
# A conformance report to gate on and record in every manifest, when one exists (`make matrix-full` writes the
# one a release passes; `make matrix` writes a planned one, which the gate refuses).
RELEASE_REPORT ?= $(wildcard reports/matrix.json)
# The full commit the provenance names (always, tag or not).
RELEASE_SOURCE_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# The PEM ECDSA key that signs out/release/checksums.txt (cosign generate-key-pair; $$COSIGN_PASSWORD); empty:
# a key made for this run (out/release/signing/cosign.key). CI signs keyless with cosign instead.
RELEASE_SIGNING_KEY ?=

.PHONY: release-deps release-tool release-test release-vsix-test release-npm-test release release-snapshot
release-deps: ## install docker-registry (loopback OCI tests), node and npm
	scripts/release-deps.sh

release-tool: ## build confine-release for the host into out/confine-release
	cd release && CGO_ENABLED=0 go build -trimpath -o $(CONFINE_RELEASE) ./cmd/confine-release

release-test: release-deps ## release/ tests: verify's failure modes on real ELFs, OCI against a real registry, layouts, no ELF in git, the AppArmor profile through a real apparmor_parser
	cd release && CONFINE_REQUIRE_REGISTRY=1 CONFINE_REQUIRE_APPARMOR=1 go test -count=1 ./...

release-vsix-test: release-deps release-tool build ## each VS Code target: package, the real `vsce package --target`, unpack, launchers = dist/bin, mode 755
	scripts/release-vsix-test.sh $(CONFINE_RELEASE) dist/bin $(OUT)/vsix-test

release-npm-test: release-deps release-tool build ## npm-pack the packages from dist/bin, install them, node --test against the real launcher
	scripts/release-npm-test.sh $(CONFINE_RELEASE) dist/bin $(OUT)/npm-test

release: release-deps release-tool ## offline: build twice (reproducible), verify, package, push to a loopback registry, pull back, write in-toto provenance, sign checksums.txt, verify both, print the artifact table
	CONFINE_VERSION=$(RELEASE_VERSION) scripts/release-repro.sh dist/bin $(OUT)/release-repro
	$(CONFINE_RELEASE) release --dist dist/bin --repro $(OUT)/release-repro --version $(RELEASE_VERSION) \
	  --commit $(RELEASE_COMMIT) --source-commit $(RELEASE_SOURCE_COMMIT) --out $(OUT)/release \
	  $(if $(RELEASE_REPORT),--report $(RELEASE_REPORT)) $(if $(RELEASE_SIGNING_KEY),--signing-key $(RELEASE_SIGNING_KEY))

release-snapshot: release-tool build ## goreleaser release --snapshot --clean (offline, publishes nothing) on dist/bin, then prove it from out/goreleaser/artifacts.json
	CONFINE_VERSION=$(RELEASE_VERSION) scripts/release-goreleaser.sh release --snapshot --clean
	$(CONFINE_RELEASE) goreleaser-check --dist dist/bin --artifacts out/goreleaser/artifacts.json

DEPS_TARGETS += release-deps
TEST_TARGETS += release-test release-npm-test release-vsix-test
