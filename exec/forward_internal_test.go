package exec

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// FuzzForwardDecode: what a forwarded statement's request or answer
// decodes from any bytes is a value or an error, never a panic; and a
// request and an answer decode to what was encoded.
func FuzzForwardDecode(f *testing.F) {
	p, err := parser.Parse("SELECT v FROM q WHERE v > ? LIMIT 1 FOR POP WAIT ?")
	require.NoError(f, err)
	at := time.Unix(1_700_000_000, 5).UTC()
	b := &bound{p: p, token: queues.Token{ID: 7, At: at, Unsure: true}}
	args := Args{Positional: []any{int64(3), 2 * time.Second}}
	req, err := encodeCall(b, args, time.Second, context.Background())
	require.NoError(f, err)
	c, err := decodeCall(req)
	require.NoError(f, err)
	require.Equal(f, &call{text: p.Text, args: args, token: queues.Token{ID: 7, At: time.Unix(0, at.UnixNano()), Unsure: true}, waitLeft: time.Second}, c)

	res := &Result{HasRows: true, Columns: []string{"v", "t"}, Types: []parser.Type{parser.TypeInt, parser.TypeTimestamp},
		Nullable: []bool{false, true}, Lengths: []int{0, 0}, Rows: [][]any{{int64(1), at}, {int64(2), nil}}, RowsAffected: 2,
		popped: popped{t: &Table{Name: "q", ID: 9}, rows: []row{
			{item: queues.Item{ID: 1, Priority: 2, Resources: []int64{3, 4}, Value: []byte{5}, VisibleAt: at, Lease: 6, Attempts: 7, Seq: 8, PushedAt: at, Held: true}},
			{item: queues.Item{ID: 2, Value: []byte{}}},
		}}}
	out := encodeOutcome(res, nil)
	got, err := decodeOutcome(out)
	require.NoError(f, err)
	require.Equal(f, res, got)

	f.Add(req)
	f.Add(out)
	f.Add(encodeOutcome(nil, ErrNoTable))
	f.Add(tuple.Tuple{int64(forwardVersion), "x", true, tuple.Tuple{tuple.Tuple{int64(99)}}}.Pack())
	f.Add([]byte{0xff, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeCall(data)
		_, _ = decodeOutcome(data)
	})
}
