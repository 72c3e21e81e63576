#!/usr/bin/env bash
# The supervisor against the mount layer (issue 15), paired in one run: the same confine, once where the mount
# layer can be built and once under a wrapper that takes namespaces away (as Docker's default seccomp profile
# does), so that it falls back to the supervisor. Both run through the same small static wrapper, so that it
# cancels out. Workloads, each in a fresh directory of the worktree:
#   launch  /bin/true
#   tar     tar xf of a 10,000-file archive (a chmod-free extract still sets each file's mtime: utimensat)
#   git     git init, add -A and commit of a 1,000-file tree
# as root and, when run as root, as nobody. Prints medians per run and the ratio supervisor/mount-layer (the
# issue's targets: launch <= 1.2x, tar and git <= 1.5x). Benchmarks, never a timed test.
# The worktree's file system changes what a supervised call costs against the work around it: on ext4, a tar x
# that keeps creating and deleting 10,000 files slows as the run goes on (the inode allocator passes over
# recently deleted inodes), which hides the supervisor's cost. BENCH_TMPFS=1 (as root) puts the worktree on a
# tmpfs, where little but the supervisor's round trips is left to compare. The file system is printed.
# BENCH_BASELINE=path/to/other-confine adds that build's supervisor to every round (e.g. the last release, or main
# before a change), and the ratio supervisor/baseline-supervisor: the change's cost, paired in the same run.
# usage: scripts/bench-supervisor.sh path/to/confine [runs-per-round] [rounds] [workloads, default "true tar git"]
set -euo pipefail
confine=${1:?usage: $0 path/to/confine [runs] [rounds]}
runs=${2:-5}
rounds=${3:-5}
workloads=${4:-true tar git}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /var/tmp/confine-bench-sv.XXXX)
trap 'umount "$work/w" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/w" "$work/floor-src" "$work/src"
if [[ ${BENCH_TMPFS:-} == 1 ]]; then
	mount -t tmpfs -o size=1g tmpfs "$work/w"
fi
echo "worktree file system: $(stat -f -c %T "$work/w")"
cp "$confine" "$work/confine"
baseline=${BENCH_BASELINE:-}
[[ -z $baseline ]] || cp "$baseline" "$work/baseline"
# One static wrapper for both variants, so that they pay the same: `wrap plain CMD...` only execs;
# `wrap nons CMD...` first installs a filter that answers unshare and clone with a namespace flag EPERM and
# clone3 ENOSYS (what Docker's default profile does to namespaces), so that confine has no mount layer.
cat >"$work/floor-src/main.go" <<'GO'
package main

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

type sockFilter struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func main() {
	runtime.LockOSThread()
	if os.Args[1] == "nons" {
		const ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
		const flags = 0x10000000 | 0x00020000 // CLONE_NEWUSER | CLONE_NEWNS
		prog := []sockFilter{ // {code, jt, jf, k}; jumps count from the next instruction
			{ld, 0, 0, 0},                            // 0: nr
			{jeq, 6, 0, sysClone3},                   // 1: clone3 -> 8
			{jeq, 1, 0, uint32(syscall.SYS_UNSHARE)}, // 2: unshare -> 4
			{jeq, 0, 2, uint32(syscall.SYS_CLONE)},   // 3: clone -> 4, else 6
			{ld, 0, 0, 16},                           // 4: args[0], low word
			{jset, 1, 0, flags},                      // 5: a namespace flag -> 7
			{ret, 0, 0, 0x7fff0000},                  // 6: SECCOMP_RET_ALLOW
			{ret, 0, 0, 0x00050000 | 1},              // 7: SECCOMP_RET_ERRNO | EPERM
			{ret, 0, 0, 0x00050000 | 38},             // 8: SECCOMP_RET_ERRNO | ENOSYS
		}
		fprog := struct {
			n uint16
			f *sockFilter
		}{uint16(len(prog)), &prog[0]}
		syscall.RawSyscall(syscall.SYS_PRCTL, 38, 1, 0) // PR_SET_NO_NEW_PRIVS
		if _, _, e := syscall.RawSyscall(sysSeccomp, 1, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
			panic(e)
		}
	}
	syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
}
GO
case $(go env GOARCH) in
amd64) printf 'package main\n\nconst sysSeccomp, sysClone3 = 317, 435\n' >"$work/floor-src/nr.go" ;;
arm64) printf 'package main\n\nconst sysSeccomp, sysClone3 = 277, 435\n' >"$work/floor-src/nr.go" ;;
esac
printf 'module floor\ngo 1.22\n' >"$work/floor-src/go.mod"
(cd "$work/floor-src" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/wrap" .)
(cd "$root/sandbox" && go build -o "$work/launchbench" ./internal/launchbench)

# 10,000 small files in 100 directories for tar; the first 1,000 of them for git.
for d in $(seq -w 0 99); do
	mkdir -p "$work/src/d$d"
	for f in $(seq -w 0 99); do echo "$d$f" >"$work/src/d$d/f$f"; done
done
tar cf "$work/files.tar" -C "$work/src" .
mkdir -p "$work/git-src" && cp -r "$work/src"/d0[0-9] "$work/git-src/"
W=$work/w
cat >"$work/tar.sh" <<EOS
set -e
d=\$(mktemp -d "$W/tar.XXXXXX"); tar xf "$work/files.tar" -C "\$d"; rm -rf "\$d"
EOS
cat >"$work/git.sh" <<EOS
set -e
d=\$(mktemp -d "$W/git.XXXXXX"); cp -r "$work/git-src/." "\$d"; cd "\$d"
git init -q; git add -A; git -c user.name=b -c user.email=b@b commit -qm bench; cd "$W"; rm -rf "\$d"
EOS
chmod -R a+rX "$work" && chmod 777 "$W"

bench() { # label, runs, then launchbench's -uid/-gid if any
	local label=$1 n=$2 w ratios=() variants=()
	shift 2
	for w in $workloads; do
		local cmd=/bin/true
		[[ $w == true ]] || cmd="/bin/sh $work/$w.sh"
		ratios+=(-ratio "supervisor-$w/layer-$w")
		variants+=("layer-$w=$work/wrap plain $work/confine --worktree $W -- $cmd"
			"supervisor-$w=$work/wrap nons $work/confine --worktree $W -- $cmd")
		if [[ -n $baseline ]]; then
			ratios+=(-ratio "supervisor-$w/baseline-supervisor-$w")
			variants+=("baseline-supervisor-$w=$work/wrap nons $work/baseline --worktree $W -- $cmd")
		fi
	done
	echo "== $label ($n runs x $rounds rounds)"
	"$work/launchbench" -runs "$n" -rounds "$rounds" "$@" "${ratios[@]}" "${variants[@]}"
}
bench "as $(id -un)" "$runs"
if [[ $(id -u) == 0 ]]; then
	bench "as nobody" "$runs" -uid 65534 -gid 65534
fi
