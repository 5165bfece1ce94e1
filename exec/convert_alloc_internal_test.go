package exec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/parser"
)

// A value already of its column's type is passed on as it is, the same
// interface value: converting the arguments of an INSERT allocates
// nothing for them, where boxing an int64 again allocated for every
// number past 255.
//
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestConvertKeepsValuesOfTheColumnsType(t *testing.T) {
	for _, c := range []struct {
		typ parser.Type
		v   any
	}{
		{parser.TypeInt, int64(1 << 40)},
		{parser.TypeFloat, 2.5},
		{parser.TypeText, "some text"},
	} {
		col := &Column{Name: "c", Type: c.typ}
		got, err := convert(col, c.v)
		require.NoError(t, err)
		require.Equal(t, c.v, got)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := convert(col, c.v); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, "%s", c.typ)
	}
}
