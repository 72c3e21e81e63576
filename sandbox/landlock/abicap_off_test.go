//go:build !confine_abicap

package landlock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestABICapUnreachable: in the shipped build (no confine_abicap tag) the cap variable changes nothing, whatever
// its value.
func TestABICapUnreachable(t *testing.T) {
	for _, v := range []string{"1", "3", "junk", "0"} {
		t.Setenv("CONFINE_TEST_ABI_CAP", v)
		st, err := Query(&fake{abi: 6})
		require.NoError(t, err)
		require.Equal(t, 6, st.ABI, "CONFINE_TEST_ABI_CAP=%s", v)
	}
}
