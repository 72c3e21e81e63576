package landlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Host is the real Syscalls: each method is one system call, named after the uapi
// (include/uapi/linux/landlock.h, include/uapi/linux/prctl.h).
type Host struct{}

// rulesetAttr is struct landlock_ruleset_attr: handled_access_fs (5.13, ABI 1), handled_access_net (6.7, ABI 4)
// and scoped (6.12, ABI 6). confine never handles network access. The size passed is that of the prefix that
// was filled: 8 bytes without scopes, 24 with them, so an older kernel never sees a field it does not know.
type rulesetAttr struct {
	HandledAccessFS  uint64
	HandledAccessNet uint64
	Scoped           uint64
}

// CreateRuleset calls landlock_create_ruleset(2) with handled_access_fs = handledFS (5.13, ABI 1) and, if
// scoped != 0, scoped (LANDLOCK_SCOPE_*, 6.12, ABI 6). With handledFS == 0 and a flag such as unix.LANDLOCK_CREATE_RULESET_VERSION, it passes a NULL attr and size 0 and
// returns the ABI version (or, with LANDLOCK_CREATE_RULESET_ERRATA, the errata bitmask) instead of a descriptor.
// Errors: ENOSYS (built without Landlock), EOPNOTSUPP (built in but disabled), EINVAL, E2BIG, ENOMSG.
func (Host) CreateRuleset(handledFS, scoped uint64, flags uint32) (int, error) {
	var ptr, size uintptr
	attr := rulesetAttr{HandledAccessFS: handledFS, Scoped: scoped}
	switch {
	case scoped != 0:
		ptr, size = uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)
	case handledFS != 0:
		ptr, size = uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr.HandledAccessFS)
	}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, ptr, size, uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// AddPathBeneath calls landlock_add_rule(2) with LANDLOCK_RULE_PATH_BENEATH: the inode behind parentFD (O_PATH
// is enough) gets allowed. The system call takes no size, and its flags are 0.
func (Host) AddPathBeneath(rulesetFD int, allowed uint64, parentFD int) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(parentFD)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// SetNoNewPrivs calls prctl(PR_SET_NO_NEW_PRIVS, 1) (3.5), which restrict_self needs without CAP_SYS_ADMIN.
func (Host) SetNoNewPrivs() error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }

// RestrictSelf calls landlock_restrict_self(2) with flags 0: the calling thread (only, before ABI 8's TSYNC)
// enters the ruleset's domain.
func (Host) RestrictSelf(rulesetFD int) error {
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFD), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Close closes a descriptor.
func (Host) Close(fd int) error { return unix.Close(fd) }
