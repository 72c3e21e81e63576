// Package nsdeny runs a command where namespaces cannot be created, as in a container whose seccomp profile
// forbids them (Docker's default profile, for one). The conformance suite uses it to take confine's mount layer
// away, so that the fallback (report.metadata "seccomp-deny") and Landlock on its own can be checked on any
// kernel, as root too.
//
// The filter answers EPERM to unshare(2) and clone(2) whose flags ask for a new user or mount namespace
// (CLONE_NEWUSER, CLONE_NEWNS; include/uapi/linux/sched.h), and ENOSYS to clone3(2), whose flags it cannot
// inspect (what container runtimes do, so that callers fall back to clone). Everything else is allowed. It is
// installed with SECCOMP_FILTER_FLAG_TSYNC on every thread, after PR_SET_NO_NEW_PRIVS, and survives execve.
package nsdeny

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/hostemu"
)

// Flags is the set of clone/unshare flags the filter refuses.
const Flags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h): nr (s32), arch (u32), instruction_pointer
// (u64), args[6] (u64). args[0]'s low 32 bits are at 16 on little-endian amd64 and arm64.
const (
	offNr    = 0
	offArch  = 4
	offArg0  = 16
	retAllow = unix.SECCOMP_RET_ALLOW
)

// Program returns the filter for the native architecture (auditArch, e.g. AUDIT_ARCH_X86_64). System calls of
// another architecture are allowed: the filter narrows what the command can do, it is not a sandbox.
func Program(auditArch uint32) []unix.SockFilter {
	stmt, jump, ld, jeq, ret := hostemu.Stmt, hostemu.Jump, hostemu.LdAbsW, hostemu.JeqK, hostemu.RetK
	return []unix.SockFilter{
		/* 0 */ stmt(ld, offArch),
		/* 1 */ jump(jeq, auditArch, 0, 6), // another arch: allow (8)
		/* 2 */ stmt(ld, offNr),
		/* 3 */ jump(jeq, unix.SYS_CLONE3, 6, 0), // ENOSYS (10)
		/* 4 */ jump(jeq, unix.SYS_UNSHARE, 1, 0), // check the flags (6)
		/* 5 */ jump(jeq, unix.SYS_CLONE, 0, 2), // check the flags (6), else allow (8)
		/* 6 */ stmt(ld, offArg0),
		/* 7 */ jump(hostemu.JsetK, Flags, 1, 0), // EPERM (9), else allow (8)
		/* 8 */ stmt(ret, retAllow),
		/* 9 */ stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)),
		/* 10 */ stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)),
	}
}

// Install sets PR_SET_NO_NEW_PRIVS and the filter on every thread of this process.
func Install() error {
	arch, err := hostemu.NativeArch()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := Program(arch)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER, TSYNC): %w", errno)
	}
	return nil
}

// Main is `confine-conformance no-namespaces CMD [ARGS...]`: install the filter, then execve CMD (looked up in
// PATH) in this process. It returns only on failure, with exit status 2.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "no-namespaces: want a command")
		return 2
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "no-namespaces: %v\n", err)
		return 2
	}
	runtime.LockOSThread()
	if err := Install(); err != nil {
		fmt.Fprintf(os.Stderr, "no-namespaces: %v\n", err)
		return 2
	}
	err = unix.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "no-namespaces: exec %s: %v\n", path, err)
	return 2
}
