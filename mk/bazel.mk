# Bazel: the build of record for shipped binaries (docs/bazel.md). tools/bazel picks an installed Bazel of
# .bazelversion, else the offline bootstrap under $(CACHE)/bazel (needs root).
BAZEL := tools/bazel

.PHONY: bazel-deps build gazelle bazel-test
bazel-deps: ## prepare the offline Bazel under $(CACHE)/bazel (sid chroot, rules_go, gazelle; minutes, once)
	@# tools/bazel's host commands: ip (iproute2); unshare, nsenter, flock, mount (util-linux, mount).
	@command -v ip >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends iproute2; }
	CONFINE_BAZEL_SETUP_ONLY=1 $(BAZEL)

build: ## bazel build //:release_binaries into dist/bin/<platform>/confine; prints platform, size, sha256
	scripts/bazel-dist.sh dist/bin

gazelle: ## regenerate the BUILD.bazel files (bazel run //:gazelle)
	$(BAZEL) run //:gazelle

bazel-test: ## BUILD files current, go/bazel test parity, bazel test //..., -c opt artifacts, clean-build reproducibility, edit check
	scripts/bazel-test.sh

DEPS_TARGETS += bazel-deps
TEST_TARGETS += bazel-test
