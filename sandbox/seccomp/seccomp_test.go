package seccomp

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// run interprets the classic BPF subset the filter uses over one struct seccomp_data.
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg1 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	binary.LittleEndian.PutUint64(data[16+8:], arg1)
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
