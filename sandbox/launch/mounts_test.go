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
