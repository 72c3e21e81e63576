// Package kabi asks the running kernel for its Landlock ABI and errata, independently of the launcher, and holds
// the conformance suite's own table of the write-class access rights each ABI knows. The suite compares the
// launcher's report against these, so this table is a second, deliberately separate, oracle: it is written from
// include/uapi/linux/landlock.h and Documentation/userspace-api/landlock.rst, not imported from sandbox/.
package kabi

import (
	"errors"
	"sort"

	"golang.org/x/sys/unix"
)

// State says whether the kernel has Landlock, with the spelling the launcher's report uses.
type State string

const (
	Available State = "available" // landlock_create_ruleset(VERSION) returned an ABI >= 1
	Absent    State = "absent"    // ENOSYS: built without CONFIG_SECURITY_LANDLOCK
	Disabled  State = "disabled"  // EOPNOTSUPP: built in, but not in lsm= / CONFIG_LSM
)

// Status is the kernel's own answer to the ABI and errata queries (the launcher's landlock.Status).
type Status struct {
	State  State
	ABI    int    // 0 unless State is Available
	Errata uint64 // LANDLOCK_CREATE_RULESET_ERRATA (Linux 6.15+); 0 when the kernel does not know the flag
	Errno  string // "ENOSYS" or "EOPNOTSUPP" when not Available, else ""
}

// Query calls landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) and, when that works,
// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA). Any errno other than ENOSYS and EOPNOTSUPP
// is returned as an error.
func Query() (Status, error) {
	abi, err := createRuleset(unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errors.Is(err, unix.ENOSYS):
		return Status{State: Absent, Errno: "ENOSYS"}, nil
	case errors.Is(err, unix.EOPNOTSUPP):
		return Status{State: Disabled, Errno: "EOPNOTSUPP"}, nil
	case err != nil:
		return Status{}, err
	}
	k := Status{State: Available, ABI: int(abi)}
	if errata, err := createRuleset(unix.LANDLOCK_CREATE_RULESET_ERRATA); err == nil {
		k.Errata = uint64(errata)
	} else if !errors.Is(err, unix.EINVAL) { // EINVAL: the kernel predates the errata flag
		return Status{}, err
	}
	return k, nil
}

func createRuleset(flags uintptr) (uintptr, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, flags)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// fsRight is one filesystem access right: its uapi name without LANDLOCK_ACCESS_FS_, the ABI that introduced it,
// whether it is write-class (what confine handles), and whether a rule on a non-directory may carry it.
type fsRight struct {
	name      string
	abi       int
	write     bool
	fileRight bool
}

// fsRights follows include/uapi/linux/landlock.h. File rights are those listed as applying to files in
// Documentation/userspace-api/landlock.rst ("Filesystem flags").
var fsRights = []fsRight{
	{"EXECUTE", 1, false, true},
	{"WRITE_FILE", 1, true, true},
	{"READ_FILE", 1, false, true},
	{"READ_DIR", 1, false, false},
	{"REMOVE_DIR", 1, true, false},
	{"REMOVE_FILE", 1, true, false},
	{"MAKE_CHAR", 1, true, false},
	{"MAKE_DIR", 1, true, false},
	{"MAKE_REG", 1, true, false},
	{"MAKE_SOCK", 1, true, false},
	{"MAKE_FIFO", 1, true, false},
	{"MAKE_BLOCK", 1, true, false},
	{"MAKE_SYM", 1, true, false},
	{"REFER", 2, true, false},    // Linux 5.19
	{"TRUNCATE", 3, true, true},  // Linux 6.2
	{"IOCTL_DEV", 5, true, true}, // Linux 6.10
	// Linux 7.1: connecting to a pathname unix socket. Not a write, but confine handles it with the writes (a
	// socket outside is a door to a process acting unconfined), so it is in the handled set from ABI 9.
	{"RESOLVE_UNIX", 9, true, false},
}

// WriteRights returns, sorted, the write-class filesystem rights that ABI abi knows: exactly what confine must
// handle on that kernel. ABI 0 (no Landlock) has none. ABIs 6 to 8, 10 and 11 add no filesystem right; 9 adds
// RESOLVE_UNIX, which confine handles with them.
func WriteRights(abi int) []string {
	var out []string
	for _, r := range fsRights {
		if r.write && r.abi <= abi {
			out = append(out, r.name)
		}
	}
	sort.Strings(out)
	return out
}

// IsFileRight reports whether a rule on a non-directory may carry the right (other rights give EINVAL there).
func IsFileRight(name string) bool {
	for _, r := range fsRights {
		if r.name == name {
			return r.fileRight
		}
	}
	return false
}

// IsWriteRight reports whether the right is write-class.
func IsWriteRight(name string) bool {
	for _, r := range fsRights {
		if r.name == name {
			return r.write
		}
	}
	return false
}

// MinABI returns the ABI that introduced the right, or 0 for an unknown name.
func MinABI(name string) int {
	for _, r := range fsRights {
		if r.name == name {
			return r.abi
		}
	}
	return 0
}

// KernelFor names the first mainline kernel of each ABI, for skip messages (Documentation/userspace-api/landlock.rst).
func KernelFor(abi int) string {
	k := map[int]string{1: "5.13", 2: "5.19", 3: "6.2", 4: "6.7", 5: "6.10", 6: "6.12", 7: "6.15", 8: "7.0", 9: "7.1", 10: "7.2", 11: "7.3"}[abi]
	if k == "" {
		return "unknown"
	}
	return k
}
