package landlock

import (
	"math/bits"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Access is a set of LANDLOCK_ACCESS_FS_* rights (include/uapi/linux/landlock.h).
type Access uint64

// The filesystem rights confine uses, with the ABI (and first kernel) that added each.
const (
	Execute    Access = unix.LANDLOCK_ACCESS_FS_EXECUTE     // ABI 1 (5.13)
	WriteFile  Access = unix.LANDLOCK_ACCESS_FS_WRITE_FILE  // ABI 1 (5.13)
	ReadFile   Access = unix.LANDLOCK_ACCESS_FS_READ_FILE   // ABI 1 (5.13)
	ReadDir    Access = unix.LANDLOCK_ACCESS_FS_READ_DIR    // ABI 1 (5.13)
	RemoveDir  Access = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR  // ABI 1 (5.13)
	RemoveFile Access = unix.LANDLOCK_ACCESS_FS_REMOVE_FILE // ABI 1 (5.13)
	MakeChar   Access = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR   // ABI 1 (5.13)
	MakeDir    Access = unix.LANDLOCK_ACCESS_FS_MAKE_DIR    // ABI 1 (5.13)
	MakeReg    Access = unix.LANDLOCK_ACCESS_FS_MAKE_REG    // ABI 1 (5.13)
	MakeSock   Access = unix.LANDLOCK_ACCESS_FS_MAKE_SOCK   // ABI 1 (5.13)
	MakeFifo   Access = unix.LANDLOCK_ACCESS_FS_MAKE_FIFO   // ABI 1 (5.13)
	MakeBlock  Access = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK  // ABI 1 (5.13)
	MakeSym    Access = unix.LANDLOCK_ACCESS_FS_MAKE_SYM    // ABI 1 (5.13)
	Refer      Access = unix.LANDLOCK_ACCESS_FS_REFER       // ABI 2 (5.19)
	Truncate   Access = unix.LANDLOCK_ACCESS_FS_TRUNCATE    // ABI 3 (6.2)
	IoctlDev   Access = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV   // ABI 5 (6.10)
	// ResolveUnix is connecting to a pathname unix socket (ABI 9, 7.1): not a write, but a socket is a door
	// to a process outside, which acts for the command unconfined (a Docker or tmux socket means host root).
	ResolveUnix Access = unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
)

// Scope is a set of LANDLOCK_SCOPE_* flags (include/uapi/linux/landlock.h, ABI 6, 6.12): IPC the domain may not
// reach outside itself.
type Scope uint64

const (
	ScopeAbstractUnix Scope = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET // connect to an abstract unix socket
	ScopeSignal       Scope = unix.LANDLOCK_SCOPE_SIGNAL               // kill(2), and SIGIO/SIGURG by fcntl
)

// Scopes returns the scopes ABI abi knows, which is exactly the set confine asks for: 0 below ABI 6.
func Scopes(abi int) Scope {
	if abi < 6 {
		return 0
	}
	return ScopeAbstractUnix | ScopeSignal
}

// FileRights are the rights a rule on a non-directory may carry; directory rights on a file fail with EINVAL
// (security/landlock/fs.c, ACCESS_FILE).
const FileRights = Execute | WriteFile | ReadFile | Truncate | IoctlDev

var names = map[Access]string{
	Execute: "EXECUTE", WriteFile: "WRITE_FILE", ReadFile: "READ_FILE", ReadDir: "READ_DIR",
	RemoveDir: "REMOVE_DIR", RemoveFile: "REMOVE_FILE", MakeChar: "MAKE_CHAR", MakeDir: "MAKE_DIR",
	MakeReg: "MAKE_REG", MakeSock: "MAKE_SOCK", MakeFifo: "MAKE_FIFO", MakeBlock: "MAKE_BLOCK",
	MakeSym: "MAKE_SYM", Refer: "REFER", Truncate: "TRUNCATE", IoctlDev: "IOCTL_DEV", ResolveUnix: "RESOLVE_UNIX",
}

// Names lists the rights in a by their uapi names without the LANDLOCK_ACCESS_FS_ prefix, lowest bit first.
// An unknown bit is named by its value, e.g. "0x10000".
func (a Access) Names() []string {
	out := []string{}
	for rest := uint64(a); rest != 0; rest &= rest - 1 {
		bit := Access(1) << bits.TrailingZeros64(rest)
		if n, ok := names[bit]; ok {
			out = append(out, n)
		} else {
			out = append(out, msg.Str(msg.Hex(uint64(bit))))
		}
	}
	return out
}

// String is the names joined with "|".
func (a Access) String() string { return strings.Join(a.Names(), "|") }
