package plan

import (
	"slices"
	"strings"
)

// What each case's outcome can depend on, declared per case id, so that a new case adds itself here, reviewed like
// expected.yaml. A case declared nowhere (abi-negotiation's, which check the ABI each kernel reports, and any new
// case until its author declares it) depends on the kernel itself and runs in every column: a case is never
// planned away by omission. A declaration must name every dimension in which the case's outcome can differ, not
// only those its expectations mention: a dimension left out is a column in which a regression would go unseen.
var depends = map[string][]Dim{
	// Argument parsing and usage refusals: decided before any backend is chosen.
	"fail-closed/usage":            {},
	"fail-closed/report-any-order": {},
	// Every kernel, which an undeclared case gets too, declared here so that no one adds them to launchCases:
	// file_setattr is new in 6.17, setxattrat and removexattrat in 6.13, open_tree_attr in 6.15, within ABI step 6
	// (6.12 to 7.0): the route exists only in some of its kernels.
	"side-channels/metadata-file-setattr":          All,
	"side-channels/metadata-file-setattr-fallback": All,
	"side-channels/metadata-xattrat":               All,
	"side-channels/metadata-xattrat-fallback":      All,
	"boundary/mount-table-denied":                  All,
}

// launchCases are the cases, per family, whose outcome depends only on the launcher's decision and on who asks
// (Launch). A case whose route is a system call new within one ABI step (setxattrat and removexattrat, 6.13;
// open_tree_attr, 6.15; file_setattr, 6.17: all inside step 6) does not belong here: it needs every kernel.
var launchCases = map[string][]string{
	"boundary": {
		"write-inside", "write-outside-denied", "fifo-outside", "write-outside-landlock-only",
		"shell-outside-denied", "metadata-denied", "metadata-fallback", "reads-unrestricted", "tmp-writable",
		"read-only-mode", "allow-roots", "protect", "protect-fallback",
	},
	"toctou-symlink-swap": {
		"root-swap", "component-swap", "gitfile-swap", "symlink-inside", "metadata-swap", "metadata-swap-fallback",
	},
	"dev-null": {
		"redirects", "file-rule", "other-dev-denied", "not-replaceable",
	},
	"fail-closed": {
		"no-landlock-sentinel", "stderr-empty", "stderr-noise", "bad-root", "config-aliased", "worktree-aliased", "backend-unavailable", "bwrap-exits-1",
		"bwrap-no-namespaces", "bwrap-ignores-arguments", "bwrap-boundary",
	},
	"git-worktree": {
		"linked-ops", "linked-ops-no-layer", "outside-denied", "parity", "parity-no-layer", "parity-reftable",
		"parity-plain",
	},
	"git-metadata": {
		"plain-routes", "linked-routes", "outer-root-routes", "separate-routes",
	},
	"passthrough": {
		"exit-codes", "signals", "background-ends", "stdio", "path-lookup", "not-executable-126", "not-found-127",
		"no-leaked-fds",
	},
	"side-channels": {
		"stdio-dir-fd0", "stdio-dir-fd0-fallback", "stdio-inherited-fd", "stdio-inherited-fd-fallback",
		"ipc-mqueue-create", "ipc-mqueue-create-fallback", "ipc-mqueue-unlink", "ipc-mqueue-unlink-fallback",
		"ipc-sysv-create", "ipc-sysv-create-fallback", "ipc-sysv-remove", "ipc-sysv-remove-fallback",
		"setuid-chmod", "setuid-chmod-fallback", "setuid-create-mode", "setuid-create-mode-fallback",
		"setuid-untar", "setuid-untar-fallback", "setuid-stdio-fd", "setuid-stdio-fd-fallback",
		"setuid-fcap-xattr", "setuid-fcap-xattr-fallback", "setuid-uring-open", "setuid-uring-open-fallback",
		"tty-other-pts", "tty-other-pts-fallback", "tty-resize", "tty-resize-fallback", "tty-disturb", "tty-disturb-fallback", "tty-foreground",
		"tty-foreground-fallback", "signals-kill", "signals-kill-fallback", "signals-pidfd",
		"signals-pidfd-fallback", "signals-sigio", "signals-sigio-fallback", "signals-prlimit",
		"signals-prlimit-fallback", "abstract-unix", "abstract-unix-fallback", "unix-pathname",
		"unix-pathname-fallback", "unix-pathname-allowed", "unix-pathname-allowed-fallback", "keyring-session",
		"keyring-session-fallback", "keyring-user", "keyring-user-fallback", "keyring-user-by-id",
		"keyring-user-by-id-fallback", "keyring-rewrite-linked", "keyring-rewrite-linked-fallback", "locks-flock",
		"locks-flock-fallback", "caps-bounding", "caps-bounding-fallback", "core-dump", "core-dump-fallback",
		"metadata-uring-xattr", "metadata-uring-xattr-fallback", "metadata-atime", "metadata-atime-fallback",
		"strict", "strict-fallback", "probe-channels", "probe-channels-fallback",
	},
	"workflow": {
		"git", "git-fallback", "touch", "touch-fallback", "chmod-x", "chmod-x-fallback", "tar-x", "tar-x-fallback",
		"cp-p", "cp-p-fallback", "shutil-copy2", "shutil-copy2-fallback",
	},
	"toolchains": {
		"python-multiprocessing", "mktemp-tmpdir-outside", "git-init-commit-gc", "nested-confine",
		"unshare-userns",
	},
	"wsl-interop": {
		"exe-escape", "no-layer-refused",
	},
	"deputy": {
		"supervisor-proc-root", "supervisor-proc-cwd", "supervisor-proc-fd", "device-node", "device-node-fallback",
		"git-pointer", "git-pointer-fallback", "profile-fifo", "profile-fifo-fallback", "signal-dropped-uid",
		"signal-dropped-uid-fallback", "metadata-dropped-uid", "metadata-dropped-uid-fallback", "supervisor-moved-dir",
	},
	"workloads": {
		"go-build-test", "npm-ci-build-test", "python-venv-pip-wheel", "pytest-process-pool",
		"configure-make-check", "cargo-build-test", "gpg-keyring-inside", "gpg-agent-outside", "dev-server-sigint",
		"dev-server-sigint-ignored", "pager-pty",
	},
}

// Depends returns what case id depends on: its entry in depends, Launch where launchCases lists it, else every
// dimension.
func Depends(id string) []Dim {
	if d, ok := depends[id]; ok {
		return d
	}
	family, name, _ := strings.Cut(id, "/")
	if slices.Contains(launchCases[family], name) {
		return Launch
	}
	return All
}

// Declared lists every case id depends and launchCases name, once per declaration (an id declared twice appears
// twice), for a check that each names a real case exactly once.
func Declared() []string {
	var out []string
	for id := range depends {
		out = append(out, id)
	}
	for family, names := range launchCases {
		for _, n := range names {
			out = append(out, family+"/"+n)
		}
	}
	return out
}
