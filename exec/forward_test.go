package exec_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/exec"
	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// servingDB is the database of a serving process, as kv/shared's is: its
// executor registers the handler that answers the statements forwarded to
// it.
type servingDB struct {
	kv.Database
	mu      sync.Mutex
	handler func(context.Context, []byte) ([]byte, error)
}

func (s *servingDB) ServeCalls(h func(context.Context, []byte) ([]byte, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

func (s *servingDB) ServingCertain() bool { return true }

func (s *servingDB) call(ctx context.Context, req []byte) ([]byte, error) {
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	return h(ctx, req)
}

// clientDB is the same database seen from a client process, whose
// commits are not certain: its autocommit pops go to the server, through
// forward, which the test sets to lose connections.
type clientDB struct {
	kv.Database
	forward func(ctx context.Context, req []byte) ([]byte, bool, error)
}

func (c *clientDB) Forward(ctx context.Context, req []byte) ([]byte, bool, error) {
	return c.forward(ctx, req)
}

// lost is what a call whose connection was lost in flight fails with.
var lost = kv.Errorf(kv.CodeCommitUnknownResult, "the connection was lost while a call was in flight")

// forwarding returns a serving process's executor and a client's on one
// in-memory database, with a table q (v INT) holding rows, and the server.
func forwarding(t *testing.T, rows ...int64) (*exec.Executor, *exec.Executor, *clientDB, *servingDB) {
	t.Helper()
	db := embedded.Open("", embedded.Config{})
	t.Cleanup(func() { _ = db.Close() })
	root := tuple.Tuple{"r"}.Pack()
	srv := &servingDB{Database: db}
	server := exec.New(srv, root)
	cdb := &clientDB{Database: db}
	cdb.forward = func(ctx context.Context, req []byte) ([]byte, bool, error) {
		resp, err := srv.call(ctx, req)
		return resp, true, err
	}
	client := exec.New(cdb, root)
	mustRun(t, server, "CREATE TABLE q (v INT NOT NULL, t TIMESTAMP, b BLOB, s TEXT)")
	for _, v := range rows {
		mustRun(t, server, "INSERT INTO q (v) VALUES (?)", v)
	}
	return server, client, cdb, srv
}

// values returns what q holds, in its order.
func values(t *testing.T, e *exec.Executor) []int64 {
	t.Helper()
	var out []int64
	for _, r := range mustRun(t, e, "SELECT v FROM q").Rows {
		out = append(out, r[0].(int64))
	}
	return out
}

// TestForwardedPopLost: the connection was lost while a forwarded pop
// was in flight. Either the serving process popped a row and the answer
// was lost (it died, or handed over): the client calls again, with the
// statement's token Unsure, and gets the same row, which its receipt
// holds. Or the call never ran (the serving process died first): the
// retry pops. Either way nothing is popped twice or lost.
func TestForwardedPopLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		lost    int  // calls lost
		applied bool // the lost calls ran
	}{
		{"answer lost", 1, true},
		{"lost before it ran", 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			server, client, cdb, srv := forwarding(t, 1, 2, 3)
			calls := 0
			cdb.forward = func(ctx context.Context, req []byte) ([]byte, bool, error) {
				calls++
				if calls > c.lost {
					resp, err := srv.call(ctx, req)
					return resp, true, err
				}
				if c.applied {
					_, err := srv.call(ctx, req)
					require.NoError(t, err)
				}
				return nil, true, lost
			}
			res := mustRun(t, client, "SELECT v FROM q LIMIT 1 FOR POP")
			require.Equal(t, [][]any{{int64(1)}}, res.Rows)
			require.Equal(t, c.lost+1, calls)
			require.Equal(t, []int64{2, 3}, values(t, server))
		})
	}
}

// TestForwardedCallsOfOneToken: the connection was lost while the
// serving process still ran the statement (a FOR POP WAIT waiting), and
// the client called again at once: the second call waits for the first,
// which takes the row pushed meanwhile, and then returns it from the
// receipt. The row is pushed once the first call waits for a push and the
// second waits for the first.
func TestForwardedCallsOfOneToken(t *testing.T) {
	t.Parallel()
	server, client, cdb, srv := forwarding(t)
	watching := &watchingDB{Database: srv.Database, waiting: make(chan struct{}, 1)}
	srv.Database = watching
	server = exec.New(srv, tuple.Tuple{"r"}.Pack())
	calls := 0
	type answer struct {
		resp []byte
		err  error
	}
	first := make(chan answer, 1)
	second := &askedCtx{asked: make(chan struct{})}
	cdb.forward = func(ctx context.Context, req []byte) ([]byte, bool, error) {
		calls++
		if calls == 1 {
			go func() {
				resp, err := srv.call(context.WithoutCancel(ctx), req)
				first <- answer{resp, err}
			}()
			<-watching.waiting
			return nil, true, lost
		}
		second.Context = ctx
		resp, err := srv.call(second, req)
		return resp, true, err
	}
	pushed := make(chan struct{})
	go func() {
		defer close(pushed)
		<-second.asked
		_, err := run(t, server, "INSERT INTO q (v) VALUES (7)")
		assert.NoError(t, err)
	}()
	res := mustRun(t, client, "SELECT v FROM q LIMIT 1 FOR POP WAIT 300")
	<-pushed
	require.Equal(t, 2, calls)
	require.Equal(t, [][]any{{int64(7)}}, res.Rows)
	require.Empty(t, values(t, server))
	// The first call ended before the second went on: it answered the
	// row (the second answered it from its receipt). A first call still
	// waiting would fail now, its watch failing with the database.
	require.NoError(t, watching.Database.(*embedded.DB).Close())
	a := <-first
	require.NoError(t, a.err)
	// Its answer, read as a client reads one.
	replay := exec.New(&clientDB{Database: cdb.Database, forward: func(context.Context, []byte) ([]byte, bool, error) {
		return a.resp, true, nil
	}}, tuple.Tuple{"r"}.Pack())
	res, err := run(t, replay, "SELECT v FROM q LIMIT 1 FOR POP")
	require.NoError(t, err, "the first call's answer")
	require.Equal(t, [][]any{{int64(7)}}, res.Rows, "the first call took the row")
}

// watchingDB is a database whose transactions' watches say, on waiting,
// when one is waited for: a FOR POP WAIT waits for its table's pushes.
type watchingDB struct {
	kv.Database
	waiting chan struct{}
}

func (d *watchingDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return kv.Transact(ctx, d, fn)
}

func (d *watchingDB) CreateTransaction(ctx context.Context) (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction(ctx)
	if err != nil {
		return nil, err
	}
	return &watchingTxn{Transaction: tr, waiting: d.waiting}, nil
}

type watchingTxn struct {
	kv.Transaction
	waiting chan struct{}
}

func (t *watchingTxn) Watch(key []byte) kv.Watch {
	return &waitedWatch{Watch: t.Transaction.Watch(key), waiting: t.waiting}
}

type waitedWatch struct {
	kv.Watch
	waiting chan struct{}
}

func (w *waitedWatch) Done() <-chan struct{} {
	select {
	case w.waiting <- struct{}{}:
	default:
	}
	return w.Watch.Done()
}

// askedCtx is a call's context that says when the call first asks whether
// it is done: a call of a token that another call of runs asks as it
// waits for that one (exec.serveCall), and nothing before.
type askedCtx struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (c *askedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

// TestForwardedResults: a forwarded statement's values, its errors (which
// errors.Is still tells apart), and its rows put back by the client.
func TestForwardedResults(t *testing.T) {
	t.Parallel()
	server, client, _, _ := forwarding(t)
	at := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	mustRun(t, server, "INSERT INTO q VALUES (1, ?, ?, ?), (2, NULL, NULL, NULL), (3, NULL, NULL, NULL)", at, []byte{0, 1}, "é")
	res := mustRun(t, client, "SELECT v, t, b, s, _attempts FROM q LIMIT 3 FOR POP")
	require.Equal(t, []string{"v", "t", "b", "s", "_attempts"}, res.Columns)
	require.Equal(t, []any{int64(1), at, []byte{0, 1}, "é", int64(0)}, res.Rows[0])
	require.Equal(t, []any{int64(2), nil, nil, nil, int64(0)}, res.Rows[1])
	require.Equal(t, 3, res.Popped())
	require.NoError(t, client.PutBack(bg, res, 1))
	require.Equal(t, []int64{2, 3}, values(t, server), "the rows not handed over are back")

	_, err := run(t, client, "SELECT v FROM nope LIMIT 1 FOR POP")
	require.ErrorIs(t, err, exec.ErrNoTable)
	require.ErrorContains(t, err, "nope")
	_, err = run(t, client, "SELECT v FROM q WHERE zz = 1 LIMIT 1 FOR LEASE 10")
	require.ErrorIs(t, err, exec.ErrUnknownColumn)
	res = mustRun(t, client, "SELECT v, _lease FROM q LIMIT 1 FOR LEASE ?", 10*time.Second)
	require.Equal(t, int64(2), res.Rows[0][0])
	require.NotZero(t, res.Rows[0][1])
	// A time.Duration is a WAIT's seconds, and elsewhere int64 nanoseconds.
	res = mustRun(t, client, "SELECT v FROM q WHERE v <> ? LIMIT 1 FOR POP WAIT ?", 2*time.Nanosecond, 5*time.Second)
	require.Equal(t, [][]any{{int64(3)}}, res.Rows)
	_, err = run(t, client, "SELECT v FROM q LIMIT 1 FOR POP WAIT ?", 301*time.Second)
	require.ErrorIs(t, err, exec.ErrValue)
}
