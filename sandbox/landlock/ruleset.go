package landlock

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Syscalls is the part of the kernel this package calls. Host is the real one; tests pass a fake, so that the
// ruleset logic runs without Landlock.
type Syscalls interface {
	// CreateRuleset is landlock_create_ruleset(2); see Host.CreateRuleset.
	CreateRuleset(handledFS, scoped uint64, flags uint32) (int, error)
	// AddPathBeneath is landlock_add_rule(2) with LANDLOCK_RULE_PATH_BENEATH.
	AddPathBeneath(rulesetFD int, allowed uint64, parentFD int) error
	// SetNoNewPrivs is prctl(PR_SET_NO_NEW_PRIVS, 1).
	SetNoNewPrivs() error
	// RestrictSelf is landlock_restrict_self(2) on the calling thread.
	RestrictSelf(rulesetFD int) error
	// Close closes a descriptor.
	Close(fd int) error
}

// State says whether the kernel has Landlock.
type State string

// The states of Landlock on a kernel, as landlock_create_ruleset(…, VERSION) answers.
const (
	Available State = "available" // it returned an ABI >= 1
	Absent    State = "absent"    // ENOSYS: the kernel was built without Landlock (e.g. < 5.13)
	Disabled  State = "disabled"  // EOPNOTSUPP: built in, but left out of lsm= / CONFIG_LSM
)

// Status is the kernel's answer to the ABI and errata queries.
type Status struct {
	State  State
	ABI    int           // >= 1 when Available, else 0
	Errata int           // LANDLOCK_CREATE_RULESET_ERRATA bitmask (0 if the kernel does not answer it)
	Errno  syscall.Errno // why it is not Available (0 when it is)
}

// Query asks the kernel for its Landlock ABI and errata. Any error other than ENOSYS and EOPNOTSUPP is
// returned as is, so a caller can refuse rather than guess.
func Query(k Syscalls) (Status, error) {
	abi, err := k.CreateRuleset(0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errors.Is(err, unix.ENOSYS):
		return Status{State: Absent, Errno: unix.ENOSYS}, nil
	case errors.Is(err, unix.EOPNOTSUPP):
		return Status{State: Disabled, Errno: unix.EOPNOTSUPP}, nil
	case err != nil:
		return Status{}, msg.Err("landlock_create_ruleset(VERSION): ", err)
	case abi < 1:
		return Status{}, msg.Err("landlock_create_ruleset(VERSION): impossible ABI ", abi)
	}
	if abi, err = capABI(abi); err != nil { // the identity unless built with -tags confine_abicap
		return Status{}, err
	}
	st := Status{State: Available, ABI: abi}
	// The errata query (added with errata fixes, backported to stable kernels) answers EINVAL where unknown.
	if errata, err := k.CreateRuleset(0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA); err == nil {
		st.Errata = errata
	}
	return st, nil
}

// Rule is one path-beneath rule: FD is the root's descriptor, opened once without following symlinks; Dir
// says whether that descriptor is a directory (from fstat on the same descriptor). Connect makes it a rule for
// a pathname unix socket that grants ResolveUnix alone (ABI 9), and no write. NoSpecial takes MAKE_SYM,
// MAKE_FIFO and MAKE_SOCK away from a directory rule (a git directory's: nothing git writes there is one, and a
// symlink, FIFO or socket left there is followed or opened later by unconfined git).
type Rule struct {
	Path      string
	FD        int
	Dir       bool
	Connect   bool
	NoSpecial bool
}

// specialFiles are the rights to make the files a NoSpecial rule does not grant (MAKE_CHAR and MAKE_BLOCK are
// granted nowhere).
const specialFiles = MakeSym | MakeFifo | MakeSock

// Rights are the rights r grants under handled: ResolveUnix for a Connect rule, else RuleRights, less
// specialFiles for a NoSpecial rule.
func (r Rule) Rights(handled Access) Access {
	switch {
	case r.Connect:
		return handled & ResolveUnix
	case r.NoSpecial:
		return RuleRights(handled, r.Dir) &^ specialFiles
	}
	return RuleRights(handled, r.Dir)
}

// Restrict creates one ruleset that handles handled and scopes scoped (0 below ABI 6), adds each rule with its Rights,
// sets no_new_privs and restricts the calling thread. Lock the OS thread first, and execve from it. Any
// failure is returned before restrict_self, so that nothing runs less confined than asked; an empty handled
// set or rule list is an error, never an unconfined "success".
func Restrict(k Syscalls, handled Access, scoped Scope, rules []Rule) error {
	if handled == 0 {
		return errors.New("landlock: empty handled access set")
	}
	if len(rules) == 0 {
		return errors.New("landlock: no rules: the ruleset would confine nothing the caller asked for")
	}
	fd, err := k.CreateRuleset(uint64(handled), uint64(scoped), 0)
	if err != nil {
		return msg.Err("landlock_create_ruleset: ", err)
	}
	defer k.Close(fd)
	for _, r := range rules {
		rights := r.Rights(handled)
		if rights == 0 {
			return msg.Err("landlock_add_rule ", r.Path, ": no right to grant")
		}
		if err := k.AddPathBeneath(fd, uint64(rights), r.FD); err != nil {
			return msg.Err("landlock_add_rule ", r.Path, " (", rights, "): ", err)
		}
	}
	if err := k.SetNoNewPrivs(); err != nil {
		return msg.Err("prctl(PR_SET_NO_NEW_PRIVS): ", err)
	}
	if err := k.RestrictSelf(fd); err != nil {
		return msg.Err("landlock_restrict_self: ", err)
	}
	return nil
}
