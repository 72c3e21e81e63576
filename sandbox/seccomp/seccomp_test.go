package seccomp

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// run interprets the classic BPF subset the filter uses over one struct seccomp_data; args[0] is 0 and args
// fills args[1], args[2], ...
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	return runArgs(t, prog, arch, nr, append([]uint64{0}, args...)...)
}

// runArgs is run with args from args[0].
func runArgs(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, v := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], v)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLdWAbs:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfJeqK:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJsetK:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJgeK:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfRetK:
			return in.K
		default:
			t.Fatalf("pc %d: unexpected opcode %#x", pc, in.Code)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

func TestProgramDeniesMetadataEverywhereAndAllowsTheRest(t *testing.T) {
	for _, p := range []Policy{{}, {Metadata: true}, {DenyTruncate: true}, {Metadata: true, DenyTruncate: true}} {
		prog, err := p.Program()
		require.NoError(t, err)
		want := uint32(retAllow)
		if p.Metadata {
			want = retEPERM
		}
		for _, s := range deniedSyscalls {
			require.Equal(t, want, run(t, prog, auditArch, s.nr, 0), "%s with %+v", s.name, p)
		}
		for _, c := range metadataIoctls {
			require.Equal(t, want, run(t, prog, auditArch, unix.SYS_IOCTL, uint64(c.cmd)), "%s with %+v", c.name, p)
		}
		want = retAllow
		if p.DenyTruncate {
			want = retEPERM
		}
		require.Equal(t, want, run(t, prog, auditArch, unix.SYS_TRUNCATE, 0), "truncate with %+v", p)
		for _, s := range ioUringSyscalls {
			want := uint32(retAllow)
			if p.Metadata {
				want = retENOSYS
			}
			require.Equal(t, want, run(t, prog, auditArch, s.nr, 0), "%s with %+v", s.name, p)
		}
		for _, nr := range []uint32{unix.SYS_OPENAT, unix.SYS_WRITE, unix.SYS_EXECVE, unix.SYS_READ, unix.SYS_FTRUNCATE} {
			require.Equal(t, uint32(retAllow), run(t, prog, auditArch, nr, 0), "syscall %d", nr)
		}
		for _, c := range alwaysIoctls {
			require.Equal(t, retEPERM, run(t, prog, auditArch, unix.SYS_IOCTL, uint64(c.cmd)), c.name)
			// Upper bits are ignored by the kernel (the command is an unsigned int), and by the filter.
			require.Equal(t, retEPERM, run(t, prog, auditArch, unix.SYS_IOCTL, 0xffffffff00000000|uint64(c.cmd)), c.name)
		}
		for _, m := range mountSyscalls {
			require.Equal(t, retEPERM, run(t, prog, auditArch, m.nr, 0), "%s with %+v", m.name, p)
		}
		require.Equal(t, uint32(retAllow), run(t, prog, auditArch, unix.SYS_IOCTL, unix.TCGETS), "TCGETS")
		require.Equal(t, uint32(retAllow), run(t, prog, auditArch, unix.SYS_IOCTL, unix.TIOCGWINSZ), "TIOCGWINSZ")
		// Another architecture's table (i386 or arm compat) is refused outright.
		require.Equal(t, uint32(retENOSYS), run(t, prog, unix.AUDIT_ARCH_I386, 1, 0))
		require.Equal(t, uint32(retENOSYS), run(t, prog, unix.AUDIT_ARCH_ARM, 1, 0))
		if hasX32 {
			require.Equal(t, uint32(retENOSYS), run(t, prog, auditArch, x32SyscallBit|unix.SYS_WRITE, 0))
		}
	}
}

// TestTerminalIoctlsNeedTTY: TIOCSWINSZ and TIOCSPGRP on the caller's terminal make the kernel signal the
// caller's foreground group (issue 43, finding 2), and TIOCSETD, TIOCEXCL and TCXONC leave it dead, unopenable
// or stopped (the attack review of the fix), so they are denied unless --tty asks for an interactive command;
// the reads and mode changes beside them stay allowed either way.
func TestTerminalIoctlsNeedTTY(t *testing.T) {
	for _, base := range []Policy{{}, {Metadata: true}, {Supervise: true, SuperviseSignals: true}} {
		for _, control := range []bool{false, true} {
			p := base
			p.TerminalControl = control
			prog, err := p.Program()
			require.NoError(t, err)
			want := uint32(retEPERM)
			if control {
				want = retAllow
			}
			for _, cmd := range []uint64{unix.TIOCSWINSZ, unix.TIOCSPGRP, 0xffffffff00000000 | unix.TIOCSPGRP,
				unix.TIOCSETD, unix.TIOCEXCL, unix.TCXONC} {
				require.Equal(t, want, run(t, prog, auditArch, unix.SYS_IOCTL, cmd), "ioctl %#x with %+v", cmd, p)
			}
			for _, cmd := range []uint64{unix.TIOCGWINSZ, unix.TIOCGPGRP, unix.TCSETS, unix.TCFLSH, unix.TIOCNXCL} {
				require.Equal(t, uint32(retAllow), run(t, prog, auditArch, unix.SYS_IOCTL, cmd), "ioctl %#x with %+v", cmd, p)
			}
			require.Equal(t, uint32(retEPERM), run(t, prog, auditArch, unix.SYS_IOCTL, 0x5412), "TIOCSTI with %+v", p)
			require.Equal(t, !control, slices.Contains(p.Denied(), "ioctl:TIOCSETD"), "Denied() with %+v", p)
		}
	}
}

func TestSetIDModesAreDeniedForRootOnly(t *testing.T) {
	plain, err := Policy{}.Program()
	require.NoError(t, err)
	root, err := Policy{NoSetID: true}.Program()
	require.NoError(t, err)
	for _, m := range setIDModes {
		args := make([]uint64, 5)
		if m.flagsArg >= 0 {
			args[m.flagsArg] = unix.O_WRONLY | unix.O_CREAT
		}
		for _, mode := range []uint64{0o4755, 0o2755, 0o6000, 0xffffffff00004000 | 0o4000} {
			args[m.modeArg] = mode
			require.Equal(t, uint32(retEPERM), runArgs(t, root, auditArch, m.nr, args...), "%s mode %o", m.name, mode)
			require.Equal(t, uint32(retAllow), runArgs(t, plain, auditArch, m.nr, args...), "%s mode %o", m.name, mode)
		}
		for _, mode := range []uint64{0o755, 0o1777, 0o644} {
			args[m.modeArg] = mode
			require.Equal(t, uint32(retAllow), runArgs(t, root, auditArch, m.nr, args...), "%s mode %o", m.name, mode)
		}
		if m.flagsArg >= 0 { // opening without creating ignores the mode
			args[m.flagsArg], args[m.modeArg] = unix.O_RDWR, 0o4755
			require.Equal(t, uint32(retAllow), runArgs(t, root, auditArch, m.nr, args...), m.name)
			args[m.flagsArg] = unix.O_TMPFILE | unix.O_RDWR
			require.Equal(t, uint32(retEPERM), runArgs(t, root, auditArch, m.nr, args...), m.name+" O_TMPFILE")
		}
	}
	for _, nr := range []uint32{unix.SYS_OPENAT2, unix.SYS_IO_URING_SETUP} {
		require.Equal(t, uint32(retENOSYS), run(t, root, auditArch, nr), "syscall %d", nr)
		require.Equal(t, uint32(retAllow), run(t, plain, auditArch, nr), "syscall %d", nr)
	}
}

func TestIPCIsDeniedOnlyWhenShared(t *testing.T) {
	shared, err := Policy{DenyIPC: true}.Program()
	require.NoError(t, err)
	own, err := Policy{}.Program()
	require.NoError(t, err)
	for _, s := range ipcSyscalls {
		require.Equal(t, uint32(retEPERM), run(t, shared, auditArch, s.nr), s.name)
		require.Equal(t, uint32(retAllow), run(t, own, auditArch, s.nr), s.name)
	}
}

func TestKeyringWritesStayInTheCommandsOwnKeyrings(t *testing.T) {
	const session, process, thread, user, userSession = 0xfffffffd, 0xfffffffe, 0xffffffff, 0xfffffffc, 0xfffffffb
	for _, p := range []Policy{{}, {Metadata: true, NoSetID: true, DenyIPC: true}} {
		prog, err := p.Program()
		require.NoError(t, err)
		keyctl := func(args ...uint64) uint32 { return runArgs(t, prog, auditArch, unix.SYS_KEYCTL, args...) }
		addKey := func(ring uint64) uint32 { return runArgs(t, prog, auditArch, unix.SYS_ADD_KEY, 0, 0, 0, 0, ring) }
		for _, ring := range []uint64{session, process, thread, 0xffffffff_fffffffd} {
			require.Equal(t, uint32(retAllow), addKey(ring), "add_key into %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_LINK, 123, ring), "link into %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_LINK, user, ring), "link @u into %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_SEARCH, ring, 0, 0, ring), "search linking into %#x", ring)
			require.Equal(t, uint32(retAllow), keyctl(unix.KEYCTL_UNLINK, 123, ring), "unlink from %#x", ring)
			require.Equal(t, uint32(retAllow), keyctl(unix.KEYCTL_CLEAR, ring), "clear %#x", ring)
		}
		for _, ring := range []uint64{user, userSession, 0, 1, 0x12345678} {
			require.Equal(t, uint32(retEPERM), addKey(ring), "add_key into %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_LINK, 123, ring), "link into %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_UNLINK, 123, ring), "unlink from %#x", ring)
			require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_CLEAR, ring), "clear %#x", ring)
		}
		require.Equal(t, uint32(retAllow), keyctl(unix.KEYCTL_SEARCH, session, 0, 0, 0), "search, no link")
		require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_SEARCH, session, 0, 0, user), "search linking into @u")
		require.Equal(t, uint32(retAllow), keyctl(unix.KEYCTL_JOIN_SESSION_KEYRING, 0), "anonymous session")
		require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_JOIN_SESSION_KEYRING, 0x7fff0000), "named session")
		require.Equal(t, uint32(retEPERM), keyctl(unix.KEYCTL_JOIN_SESSION_KEYRING, 1<<32), "named session, high word")
		for _, op := range keyctlAllowed {
			require.Equal(t, uint32(retAllow), keyctl(uint64(op), user), "op %d", op)
		}
		for _, op := range []uint64{unix.KEYCTL_UPDATE, unix.KEYCTL_REVOKE, unix.KEYCTL_SETPERM, unix.KEYCTL_SESSION_TO_PARENT,
			unix.KEYCTL_INVALIDATE, unix.KEYCTL_GET_PERSISTENT, unix.KEYCTL_MOVE, 99} {
			require.Equal(t, uint32(retEPERM), keyctl(op, session), "op %d", op)
		}
		require.Equal(t, uint32(retEPERM), run(t, prog, auditArch, unix.SYS_REQUEST_KEY), "request_key")
	}
}

func TestOtherProcessesAreOutOfReach(t *testing.T) {
	prog, err := Policy{}.Program()
	require.NoError(t, err)
	call := func(nr uint32, args ...uint64) uint32 { return runArgs(t, prog, auditArch, nr, args...) }
	require.Equal(t, uint32(retAllow), call(unix.SYS_PRLIMIT64, 0, 7, 0x7fff0000), "own limits")
	require.Equal(t, uint32(retAllow), call(unix.SYS_PRLIMIT64, 4242, 7, 0, 0x7fff0000), "reading another's")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_PRLIMIT64, 4242, 7, 0x7fff0000), "setting another's")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_PRLIMIT64, 4242, 7, 1<<32), "setting another's, high word")
	require.Equal(t, uint32(retAllow), call(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, 10), "nice")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 4242, 10), "renice -p")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, 10), "renice -u")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 0, 10), "renice -g")
	require.Equal(t, uint32(retAllow), call(unix.SYS_IOPRIO_SET, 1, 0, 4), "ionice self")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_IOPRIO_SET, 1, 4242, 4), "ionice -p")
	require.Equal(t, uint32(retEPERM), call(unix.SYS_IOPRIO_SET, 3, 0, 4), "ionice -u")
	for _, nr := range []uint32{unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR} {
		require.Equal(t, uint32(retAllow), call(nr, 0, 0), "syscall %d on self", nr)
		require.Equal(t, uint32(retEPERM), call(nr, 4242, 0), "syscall %d on another", nr)
	}
	require.Equal(t, uint32(retAllow), call(unix.SYS_SCHED_SETAFFINITY, 4242, 8, 0), "affinity stays open")
}

func TestNoChildForTheCallerNoLeaseAndLocksOnlyWhenStrict(t *testing.T) {
	for _, p := range []Policy{{}, {DenyLocks: true}} {
		prog, err := p.Program()
		require.NoError(t, err)
		call := func(nr uint32, args ...uint64) uint32 { return runArgs(t, prog, auditArch, nr, args...) }
		require.Equal(t, uint32(retEPERM), call(unix.SYS_CLONE, unix.CLONE_PARENT|uint64(unix.SIGCHLD)), "CLONE_PARENT")
		require.Equal(t, uint32(retAllow), call(unix.SYS_CLONE, uint64(unix.SIGCHLD)), "fork")
		require.Equal(t, uint32(retAllow), call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), "thread")
		require.Equal(t, uint32(retENOSYS), call(unix.SYS_CLONE3), "clone3 falls back to clone")
		require.Equal(t, uint32(retEPERM), call(unix.SYS_FCNTL, 3, unix.F_SETLEASE, unix.F_RDLCK), "lease")
		require.Equal(t, uint32(retAllow), call(unix.SYS_FCNTL, 3, unix.F_GETFD), "F_GETFD")
		want := uint32(retAllow)
		if p.DenyLocks {
			want = retEPERM
		}
		require.Equal(t, want, call(unix.SYS_FLOCK, 3, unix.LOCK_EX), "flock with %+v", p)
		for _, cmd := range []uint64{unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_SETLK, unix.F_OFD_SETLKW} {
			require.Equal(t, want, call(unix.SYS_FCNTL, 3, cmd), "fcntl %d with %+v", cmd, p)
		}
	}
}

func TestDeniedNamesTheFilter(t *testing.T) {
	require.Contains(t, Policy{Metadata: true}.Denied(), "fchmodat")
	require.Contains(t, Policy{Metadata: true}.Denied(), "ioctl:FS_IOC_SETFLAGS")
	require.NotContains(t, Policy{}.Denied(), "fchmodat")
	require.NotContains(t, Policy{}.Denied(), "truncate")
	require.Contains(t, Policy{DenyTruncate: true}.Denied(), "truncate")
	require.Contains(t, Policy{}.Denied(), "ioctl:TIOCSTI")
	require.Contains(t, Policy{}.Denied(), "mount_setattr")
	require.Equal(t, "compat-syscalls", Policy{}.Denied()[len(Policy{}.Denied())-1])
}

func TestAssemblerRefusesJumpsOutOfRange(t *testing.T) {
	var a assembler
	a.jeq(1, "far", next)
	for range 256 {
		a.ret(retAllow)
	}
	a.label("far")
	a.ret(retEPERM)
	_, err := a.assemble()
	require.ErrorContains(t, err, "out of BPF's 0..255 range")

	var b assembler
	b.jeq(1, "nowhere", next)
	_, err = b.assemble()
	require.ErrorContains(t, err, "undefined label")
}

func TestVsockIsDeniedOnlyWhenAsked(t *testing.T) {
	// The largest policy (the supervisor's, strict) keeps every jump in range with the vsock block added.
	for _, p := range []Policy{{}, {DenyVsock: true}, {DenyVsock: true, Supervise: true, DenyTruncate: true, DenyIPC: true, NoSetID: true, DenyLocks: true},
		{DenyVsock: true, Metadata: true, DenyTruncate: true, DenyIPC: true, NoSetID: true, DenyLocks: true}} {
		prog, err := p.Program()
		require.NoError(t, err, "%+v", p)
		call := func(args ...uint64) uint32 { return runArgs(t, prog, auditArch, unix.SYS_SOCKET, args...) }
		want := uint32(retAllow)
		if p.DenyVsock {
			want = retEPERM
		}
		require.Equal(t, want, call(unix.AF_VSOCK, unix.SOCK_STREAM, 0), "AF_VSOCK with %+v", p)
		require.Equal(t, want, call(unix.AF_VSOCK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), "AF_VSOCK datagram with %+v", p)
		for _, family := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK} {
			require.Equal(t, uint32(retAllow), call(family, unix.SOCK_STREAM, 0), "family %d with %+v", family, p)
		}
		require.Equal(t, p.DenyVsock, slicesContains(p.Denied(), "socket:AF_VSOCK"))
		require.Equal(t, "compat-syscalls", p.Denied()[len(p.Denied())-1])
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestProgramSupervisesSignals: with SuperviseSignals (and Supervise) every call that sends a signal other than 0
// and the descriptor-owner fcntls and ioctls go to the supervisor; signal 0 and every other fcntl and ioctl stay
// the kernel's; without it, or without Supervise, nothing of this is notified.
func TestProgramSupervisesSignals(t *testing.T) {
	for _, p := range []Policy{{Supervise: true, SuperviseSignals: true}, {Supervise: true}, {SuperviseSignals: true},
		{Supervise: true, SuperviseSignals: true, NoSetID: true, DenyIPC: true, DenyTruncate: true, DenyLocks: true, DenyVsock: true}} {
		prog, err := p.Program()
		require.NoError(t, err)
		on := p.Supervise && p.SuperviseSignals
		want := uint32(retAllow)
		if on {
			want = retNotify
		}
		for _, s := range signalCalls {
			args := make([]uint64, 4)
			args[s.sigArg] = uint64(unix.SIGTERM)
			require.Equal(t, want, runArgs(t, prog, auditArch, s.nr, args...), "%s(SIGTERM) with %+v", s.name, p)
			args[s.sigArg] = 0x100000000 // signal 0 in the int the kernel reads
			require.Equal(t, uint32(retAllow), runArgs(t, prog, auditArch, s.nr, args...), "%s(0) with %+v", s.name, p)
		}
		for _, cmd := range ownerFcntls {
			require.Equal(t, want, run(t, prog, auditArch, unix.SYS_FCNTL, uint64(cmd)), "fcntl %d with %+v", cmd, p)
		}
		for _, c := range ownerIoctls {
			require.Equal(t, want, run(t, prog, auditArch, unix.SYS_IOCTL, uint64(c.cmd)), "%s with %+v", c.name, p)
		}
		for _, cmd := range []uint64{unix.F_GETFL, unix.F_SETFL, unix.F_GETOWN, unix.F_DUPFD_CLOEXEC, unix.F_SETFD} {
			require.Equal(t, uint32(retAllow), run(t, prog, auditArch, unix.SYS_FCNTL, cmd), "fcntl %d with %+v", cmd, p)
		}
		require.Equal(t, uint32(retAllow), run(t, prog, auditArch, unix.SYS_IOCTL, 0x541b), "FIONREAD (0x541b) with %+v", p)
		if on {
			require.Contains(t, p.Denied(), "supervised:kill")
			require.Contains(t, p.Denied(), "supervised:fcntl:F_SETOWN")
		} else {
			require.NotContains(t, p.Denied(), "supervised:kill")
		}
	}
}
