#!/usr/bin/env bash
# Bazel --workspace_status_command: prints the version stamp linked into confine (x_defs sandbox/internal/cli.Version).
# STABLE_ keys are part of the link action's key; the value depends only on the git commit (and on
# whether the tree is dirty), so two builds of one commit are identical. tools/bazel computes it on the
# host and passes CONFINE_VERSION, because the offline chroot has no git and may not see the git dir.
set -euo pipefail
v=${CONFINE_VERSION:-}
if [ -z "$v" ]; then
  v=$(git describe --tags --always --dirty 2>/dev/null || echo unknown)
fi
echo "STABLE_CONFINE_VERSION $v"
