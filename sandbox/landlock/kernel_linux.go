package landlock

import (
	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/sys"
)

// Kernel is the real Syscalls.
type Kernel struct{}

func (Kernel) CreateRuleset(handledFS uint64, flags uint32) (int, error) {
	return sys.LandlockCreateRuleset(handledFS, flags)
}
func (Kernel) AddPathBeneath(rulesetFD int, allowed uint64, parentFD int) error {
	return sys.LandlockAddRulePathBeneath(rulesetFD, allowed, parentFD)
}
func (Kernel) SetNoNewPrivs() error             { return sys.SetNoNewPrivs() }
func (Kernel) RestrictSelf(rulesetFD int) error { return sys.LandlockRestrictSelf(rulesetFD) }
func (Kernel) Close(fd int) error               { return unix.Close(fd) }
