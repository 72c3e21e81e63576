// Package landlockabi asks the running kernel which Landlock ABI it supports.
package landlockabi

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/vm"
)

// Probe calls landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) (uapi linux/landlock.h, Linux 5.13)
// and classifies the answer as confine's report does: ("available", ABI) on success, ("absent", 0) on ENOSYS (not
// compiled in), ("disabled", 0) on EOPNOTSUPP (compiled in, left out of lsm=), and ("error: <errno>", 0) otherwise.
func Probe() (state string, abi int) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0:
		return vm.LandlockAvailable, int(r)
	case errors.Is(errno, unix.ENOSYS):
		return vm.LandlockAbsent, 0
	case errors.Is(errno, unix.EOPNOTSUPP):
		return vm.LandlockDisabled, 0
	default:
		return fmt.Sprintf("error: %s", unix.ErrnoName(errno)), 0
	}
}
