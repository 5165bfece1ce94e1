package shared

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// TestReadOnlyHandleAnswersNoCalls: the serving process's first handle
// with a handler is a read-only one (a shell opened with mode=ro, say).
// The pops other processes forward must not run in its executor, whose
// transactions refuse writes: they would all fail with ErrReadOnly. They
// run in a writable handle's, or, with none, in the client itself.
func TestReadOnlyHandleAnswersNoCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := openHost(t, dir, nil)
	require.True(t, srv.Serving())
	registry.mu.Lock()
	srv.h.refs++
	registry.mu.Unlock()
	ro := &DB{h: srv.h, readOnly: true}
	t.Cleanup(func() { _ = ro.Close() })
	root := tuple.Tuple{"r"}.Pack()
	exec.New(ro, root) // registers its handler first

	client := exec.New(openHost(t, dir, asClient), root)
	run := func(sql string) (*exec.Result, error) {
		p, err := parser.Parse(sql)
		require.NoError(t, err)
		return client.Auto(context.Background(), p, exec.Args{})
	}
	_, err := run("CREATE TABLE q (v INT NOT NULL)")
	require.NoError(t, err)
	_, err = run("INSERT INTO q (v) VALUES (1), (2)")
	require.NoError(t, err)
	res, err := run("SELECT v FROM q LIMIT 1 FOR POP")
	require.NoError(t, err, "a pop forwarded to a read-only handle's executor")
	require.Equal(t, [][]any{{int64(1)}}, res.Rows)

	exec.New(srv, root) // a writable handle's executor answers now
	res, err = run("SELECT v FROM q LIMIT 1 FOR POP")
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(2)}}, res.Rows)
}
