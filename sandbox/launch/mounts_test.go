package launch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnescapeMountinfo(t *testing.T) {
	require.Equal(t, "/a b/c\\d", UnescapeMountinfo(`/a\040b/c\134d`))
	require.Equal(t, "/plain", UnescapeMountinfo("/plain"))
	require.Equal(t, `/trailing\04`, UnescapeMountinfo(`/trailing\04`))
}

// TestNesting: each writable root's clone is attached after those of the roots above it, on the nearest one's.
func TestNesting(t *testing.T) {
	for _, tc := range []struct {
		name         string
		paths        []string
		order, above []int
	}{
		{"none nested", []string{"/w", "/tmp", "/dev/null"}, []int{0, 1, 2}, []int{-1, -1, -1}},
		{"worktree in /tmp", []string{"/tmp/wt", "/tmp"}, []int{1, 0}, []int{1, -1}},
		{"parent granted, git dir inside", []string{"/p/wt", "/p/wt/.git/x", "/p"}, []int{2, 0, 1}, []int{2, 0, -1}},
		{"a name that only shares a prefix", []string{"/tmpx/wt", "/tmp"}, []int{1, 0}, []int{-1, -1}},
		{"everything beneath /", []string{"/a", "/"}, []int{1, 0}, []int{1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, above := nesting(tc.paths)
			require.Equal(t, tc.order, order)
			require.Equal(t, tc.above, above)
		})
	}
}
