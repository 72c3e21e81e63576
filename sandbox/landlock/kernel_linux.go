package landlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Host is the real Syscalls: each method is one system call, named after the uapi
// (include/uapi/linux/landlock.h, include/uapi/linux/prctl.h).
type Host struct{}

// rulesetAttrFS is the prefix of struct landlock_ruleset_attr (5.13) that confine fills: handled_access_fs alone.
// Its size is what is passed, so the kernel never reads fields we did not set.
type rulesetAttrFS struct {
	HandledAccessFS uint64
}

// CreateRuleset calls landlock_create_ruleset(2) with handled_access_fs = handledFS (5.13, ABI 1). With
// handledFS == 0 and a flag such as unix.LANDLOCK_CREATE_RULESET_VERSION, it passes a NULL attr and size 0 and
// returns the ABI version (or, with LANDLOCK_CREATE_RULESET_ERRATA, the errata bitmask) instead of a descriptor.
// Errors: ENOSYS (built without Landlock), EOPNOTSUPP (built in but disabled), EINVAL, E2BIG, ENOMSG.
func (Host) CreateRuleset(handledFS uint64, flags uint32) (int, error) {
	var ptr, size uintptr
	attr := rulesetAttrFS{HandledAccessFS: handledFS}
	if handledFS != 0 {
		ptr, size = uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)
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
