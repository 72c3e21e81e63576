package landlock

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestHandledWritesPerABI(t *testing.T) {
	v1 := []string{"WRITE_FILE", "REMOVE_DIR", "REMOVE_FILE", "MAKE_CHAR", "MAKE_DIR", "MAKE_REG", "MAKE_SOCK",
		"MAKE_FIFO", "MAKE_BLOCK", "MAKE_SYM"}
	v2 := append(append([]string{}, v1...), "REFER")
	v3 := append(append([]string{}, v2...), "TRUNCATE")
	v5 := append(append([]string{}, v3...), "IOCTL_DEV")
	v9 := append(append([]string{}, v5...), "RESOLVE_UNIX")
	want := map[int][]string{-1: {}, 0: {}, 1: v1, 2: v2, 3: v3, 4: v3, 5: v5, 6: v5, 7: v5, 8: v5, 9: v9, 10: v9,
		11: v9, 12: v9, 99: v9}
	for abi, names := range want {
		got := HandledWrites(abi)
		require.Equal(t, names, got.Names(), "ABI %d", abi)
		// Reads and execution are never handled, so they stay allowed everywhere.
		require.Zero(t, got&(ReadFile|ReadDir|Execute), "ABI %d handles a read right", abi)
	}
	require.Equal(t, Access(0x1ffe^ReadFile^ReadDir), HandledWrites(1), "ABI 1 mask by value")
	require.Equal(t, Access(0xfff2), HandledWrites(5), "ABI 5 mask by value")
	require.Equal(t, Access(0x1fff2), HandledWrites(9), "ABI 9 mask by value")
}

func TestScopesFromABI6(t *testing.T) {
	for abi := -1; abi <= 12; abi++ {
		want := Scope(0)
		if abi >= 6 {
			want = Scope(0x3) // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL
		}
		require.Equal(t, want, Scopes(abi), "ABI %d", abi)
	}
}

func TestRuleRightsFileVersusDir(t *testing.T) {
	for abi := 1; abi <= HighestKnownABI; abi++ {
		h := HandledWrites(abi)
		require.Equal(t, h&^(MakeChar|MakeBlock), RuleRights(h, true), "a directory gets everything handled "+
			"but device nodes (ABI %d)", abi)
		file := RuleRights(h, false)
		require.Zero(t, file&^FileRights, "a file rule carries a directory right (ABI %d): EINVAL", abi)
		require.NotZero(t, file&WriteFile, "a file rule must allow WRITE_FILE (ABI %d)", abi)
		require.Equal(t, abi >= 3, file&Truncate != 0, "TRUNCATE on a file rule (ABI %d)", abi)
		require.Equal(t, abi >= 5, file&IoctlDev != 0, "IOCTL_DEV on a file rule (ABI %d)", abi)
	}
}

// A connect rule grants RESOLVE_UNIX alone, where it is handled (ABI 9), and so nothing below it: the launcher
// adds no such rule there.
func TestConnectRuleRights(t *testing.T) {
	for abi := 1; abi <= HighestKnownABI; abi++ {
		got := Rule{Connect: true}.Rights(HandledWrites(abi))
		if abi >= 9 {
			require.Equal(t, ResolveUnix, got, "ABI %d", abi)
		} else {
			require.Zero(t, got, "ABI %d", abi)
		}
	}
}

func TestFirstKernel(t *testing.T) {
	require.Equal(t, "5.13", FirstKernel(1))
	require.Equal(t, "6.2", FirstKernel(3))
	require.Equal(t, "", FirstKernel(0))
	require.Equal(t, "", FirstKernel(HighestKnownABI+1))
}

func TestNamesOfUnknownBits(t *testing.T) {
	require.Equal(t, []string{"WRITE_FILE", "0x80000000"}, (WriteFile | Access(1<<31)).Names())
	require.Equal(t, "REFER|TRUNCATE", (Refer | Truncate).String())
}

// fake is a Syscalls that records calls and fails where told.
type fake struct {
	abi, errata       int
	abiErr, errataErr error
	createErr, addErr error
	nnpErr, restrErr  error
	calls             []string
	handled           uint64
	added             map[int]uint64
}

func (f *fake) CreateRuleset(handled, scoped uint64, flags uint32) (int, error) {
	switch flags {
	case unix.LANDLOCK_CREATE_RULESET_VERSION:
		return f.abi, f.abiErr
	case unix.LANDLOCK_CREATE_RULESET_ERRATA:
		return f.errata, f.errataErr
	}
	f.calls = append(f.calls, "create")
	f.handled = handled
	return 100, f.createErr
}
func (f *fake) AddPathBeneath(rs int, allowed uint64, fd int) error {
	f.calls = append(f.calls, "add")
	if f.added == nil {
		f.added = map[int]uint64{}
	}
	f.added[fd] = allowed
	return f.addErr
}
func (f *fake) SetNoNewPrivs() error      { f.calls = append(f.calls, "nnp"); return f.nnpErr }
func (f *fake) RestrictSelf(rs int) error { f.calls = append(f.calls, "restrict"); return f.restrErr }
func (f *fake) Close(fd int) error        { f.calls = append(f.calls, "close"); return nil }

func TestQuery(t *testing.T) {
	st, err := Query(&fake{abi: 6, errata: 15})
	require.NoError(t, err)
	require.Equal(t, Status{State: Available, ABI: 6, Errata: 15}, st)

	st, err = Query(&fake{abi: 1, errataErr: unix.EINVAL})
	require.NoError(t, err)
	require.Equal(t, Status{State: Available, ABI: 1}, st, "a kernel without the errata query has errata 0")

	st, err = Query(&fake{abiErr: unix.ENOSYS})
	require.NoError(t, err)
	require.Equal(t, Absent, st.State)
	require.Equal(t, unix.ENOSYS, st.Errno)

	st, err = Query(&fake{abiErr: unix.EOPNOTSUPP})
	require.NoError(t, err)
	require.Equal(t, Disabled, st.State)

	_, err = Query(&fake{abiErr: unix.EPERM})
	require.ErrorIs(t, err, unix.EPERM, "an unexpected errno is an error, not a guess")
	_, err = Query(&fake{abi: 0})
	require.Error(t, err)
}

func TestRestrictOrderAndRights(t *testing.T) {
	f := &fake{}
	h := HandledWrites(3)
	err := Restrict(f, h, 0, []Rule{{Path: "/w", FD: 7, Dir: true}, {Path: "/dev/null", FD: 8, Dir: false}})
	require.NoError(t, err)
	require.Equal(t, []string{"create", "add", "add", "nnp", "restrict", "close"}, f.calls)
	require.Equal(t, uint64(h), f.handled)
	require.Equal(t, uint64(h&^(MakeChar|MakeBlock)), f.added[7])
	require.Equal(t, uint64(WriteFile|Truncate), f.added[8])
}

func TestRestrictFailsClosed(t *testing.T) {
	rules := []Rule{{Path: "/w", FD: 7, Dir: true}}
	for name, f := range map[string]*fake{
		"create":   {createErr: unix.EINVAL},
		"add rule": {addErr: unix.EINVAL},
		"nnp":      {nnpErr: unix.EPERM},
		"restrict": {restrErr: unix.EPERM},
	} {
		err := Restrict(f, HandledWrites(1), 0, rules)
		require.Error(t, err, name)
		if name != "restrict" {
			require.NotContains(t, f.calls, "restrict", "%s: must not restrict after a failure", name)
		}
	}
	require.Error(t, Restrict(&fake{}, 0, 0, rules), "empty handled set")
	require.Error(t, Restrict(&fake{}, HandledWrites(1), 0, nil), "empty ruleset")
}
