//go:build confine_abicap

package landlock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestABICap: the test build acts as min(kernel ABI, cap), and refuses a cap it cannot parse.
func TestABICap(t *testing.T) {
	for _, c := range []struct {
		cap          string
		kernel, want int
	}{{"3", 6, 3}, {"1", 11, 1}, {"9", 6, 6}, {"6", 6, 6}} {
		t.Setenv(ABICapEnv, c.cap)
		st, err := Query(&fake{abi: c.kernel})
		require.NoError(t, err)
		require.Equal(t, c.want, st.ABI, "cap %s on ABI %d", c.cap, c.kernel)
	}
	for _, bad := range []string{"0", "-1", "x", ""} {
		t.Setenv(ABICapEnv, bad)
		_, err := Query(&fake{abi: 6})
		require.Error(t, err, "cap %q", bad)
	}
}
