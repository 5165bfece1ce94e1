package exec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pseudoColumn finds every pseudo-column, in any case, and no declared
// name: its shortcut (only id and names starting with _) must not lose one.
func TestPseudoColumnFindsEach(t *testing.T) {
	t.Parallel()
	for i, c := range pseudoColumns {
		for _, name := range []string{c.Name, strings.ToUpper(c.Name)} {
			got, ok := pseudoColumn(name)
			require.True(t, ok, name)
			require.Equal(t, i, got, name)
		}
	}
	for _, name := range []string{"priority", "cpu", "payload", "_other", "ids", ""} {
		_, ok := pseudoColumn(name)
		require.False(t, ok, name)
	}
}
