package launch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnescapeMountinfo(t *testing.T) {
	require.Equal(t, "/a b/c\\d", unescapeMountinfo(`/a\040b/c\134d`))
	require.Equal(t, "/plain", unescapeMountinfo("/plain"))
	require.Equal(t, `/trailing\04`, unescapeMountinfo(`/trailing\04`))
}
