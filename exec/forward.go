package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/parser"
	"github.com/fdbqueue/fdbqueue/queues"
	"github.com/fdbqueue/fdbqueue/tuple"
)

// Forwarded statements: the autocommit pops and leases of a process that
// is a client of another (a file: database shared by the processes of a
// host, kv/shared) run in the serving process.
//
// Claims and combining (claims.go in queues, combine.go) keep the
// concurrent pops of one process from conflicting over the head of a
// queue; pops of different processes share neither, and conflict. Run in
// the serving process, every process's pops share its claims, as its own
// pops do: one round trip a statement instead of three to six, and no
// conflicts between them.
//
// A forwarded statement is exactly-once as an autocommit statement is
// under commit_unknown_result: the client makes its token before the
// first call, and the serving process runs it under that token, recording
// its receipt, whatever the certainty of its own commits. When the
// connection is lost while the call is in flight (the serving process
// died, or handed over), the client cannot know whether it ran: it calls
// again, on the process that took over (or runs it itself, if that is
// this one), with the token marked Unsure, so that the statement finds its
// receipt and returns what the first call popped. The serving process
// runs one call of a token at a time: a call made again while the first
// still runs (its connection lost, the process alive) waits for it, as
// claims would otherwise let the two take different rows.
//
// What crosses: the statement's text, its arguments, its token, what is
// left of its WAIT, and its context's deadline; back, its result (the
// rows, and the items popped, which the client puts back if the program
// does not read them) or its error, whose text, *kv.Error codes and
// sentinels (ErrNoTable, ...; forwardSentinels) errors.Is finds. The
// client's context ending ends the call's in the serving process.
//
// Statements in a transaction (sql.Tx, BEGIN) are never forwarded: they
// are the client's kv transactions. Nor are the other autocommit
// statements: an INSERT conflicts with nothing (its reads of the tail are
// snapshot reads), and a client's runs at 0.84-1.34 times the serving
// process's rate already (docs/benchmarks.md).

// Forwarder is a database whose autocommit pops run in another process
// (kv/shared's client processes): Forward has that process answer req
// with the handler it registered (CallServer), and reports whether it did
// (false: run it here). An error that kv.IsMaybeCommitted accepts leaves it
// unknown whether the handler ran.
type Forwarder interface {
	Forward(ctx context.Context, req []byte) ([]byte, bool, error)
}

// CallServer is a database whose serving process answers the requests
// other processes Forward with handler. ServingCertain reports whether
// this process serves it on an engine whose commits are certain.
type CallServer interface {
	ServeCalls(handler func(ctx context.Context, req []byte) ([]byte, error))
	ServingCertain() bool
}

// forwardVersion is the version of the request and answer encodings;
// kv/remote's handshake refuses a peer of another fdbqueue version, so this
// only guards against a mix-up of encodings in one.
const forwardVersion = 1

// maxForwardAttempts bounds the calls of one statement that lost their
// connection (each waits for a reconnect, which kv/remote bounds).
const maxForwardAttempts = 100

// forwardable reports whether b runs in the serving process: an
// autocommit pop or lease, with a text to send.
func (e *Executor) forwardable(b *bound) bool {
	if e.fwd == nil || b.p.Text == "" || b.token.ID == 0 {
		return false
	}
	s, ok := b.p.Stmt.(*parser.Select)
	return ok && s.Takes() && !isSystemSelect(s)
}

// forwarded runs b, bound to args, in the serving process, calling again
// (with its token Unsure) after a call whose connection was lost, or here,
// when this process serves. args are the caller's, as b's are not: binding
// made a time.Duration int64 nanoseconds but for WAIT (bindWait).
func (e *Executor) forwarded(ctx context.Context, b *bound, args Args) (*Result, error) {
	var waitUntil time.Time
	if b.wait.d > 0 {
		waitUntil = time.Now().Add(b.wait.d)
	}
	backoff := time.Millisecond
	var unknown error // the first call that may have been applied
	for attempt := 1; ; attempt++ {
		waitLeft := time.Duration(-1)
		if !waitUntil.IsZero() {
			waitLeft = max(0, time.Until(waitUntil))
		}
		req, err := encodeCall(b, args, waitLeft, ctx)
		if err != nil {
			return e.autoRun(ctx, b) // an argument the encoding cannot carry
		}
		resp, ok, err := e.fwd.Forward(ctx, req)
		if !ok {
			if waitLeft >= 0 {
				b.wait.d = waitLeft
			}
			return e.autoRun(ctx, b)
		}
		if err == nil {
			return decodeOutcome(resp)
		}
		if kv.IsMaybeCommitted(err) {
			b.token.Unsure = true
			if unknown == nil {
				unknown = err
			}
		}
		if !kv.IsRetryable(err) || ctx.Err() != nil || attempt == maxForwardAttempts {
			return nil, stillUnknown(err, unknown)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, stillUnknown(kv.Join(err, ctx.Err()), unknown)
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// serveCall answers a statement another process forwarded (forwarded):
// it runs it as Auto would, under the caller's token.
func (e *Executor) serveCall(ctx context.Context, req []byte) ([]byte, error) {
	c, err := decodeCall(req)
	if err != nil {
		return nil, err
	}
	p, err := parser.Parse(c.text)
	if err != nil {
		return encodeOutcome(nil, err), nil
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	b, err := e.bind(ctx, p, c.args)
	if err != nil {
		return encodeOutcome(nil, err), nil
	}
	if s, ok := p.Stmt.(*parser.Select); !ok || !s.Takes() || c.token.ID == 0 {
		return encodeOutcome(nil, fmt.Errorf("%w: only pops and leases with a token are forwarded", ErrStatement)), nil
	}
	b.token, b.forwarded = c.token, true
	if c.waitLeft >= 0 && b.wait.d > 0 {
		b.wait.d = c.waitLeft
	}
	// One call of a token at a time (see above).
	done := make(chan struct{})
	defer close(done)
	for {
		prev, running := e.serving.LoadOrStore(c.token.ID, done)
		if !running {
			break
		}
		select {
		case <-prev.(chan struct{}):
		case <-ctx.Done():
			return encodeOutcome(nil, ctx.Err()), nil
		}
	}
	defer e.serving.Delete(c.token.ID)
	res, err := e.autoRun(ctx, b)
	res, err = e.settled(ctx, b, res, err)
	return encodeOutcome(res, err), nil
}

// call is a forwarded statement, decoded.
type call struct {
	text     string
	args     Args
	token    queues.Token
	waitLeft time.Duration // -1: the statement's own
	timeout  time.Duration // 0: none
}

// Value kinds on the wire.
const (
	vNil = iota
	vInt
	vFloat
	vBool
	vBytes
	vString
	vTime
	vDuration
)

func wireValue(v any) (tuple.Tuple, error) {
	switch x := v.(type) {
	case nil:
		return tuple.Tuple{int64(vNil)}, nil
	case int64:
		return tuple.Tuple{int64(vInt), x}, nil
	case float64:
		return tuple.Tuple{int64(vFloat), x}, nil
	case bool:
		return tuple.Tuple{int64(vBool), x}, nil
	case []byte:
		if x == nil {
			x = []byte{}
		}
		return tuple.Tuple{int64(vBytes), x}, nil
	case string:
		return tuple.Tuple{int64(vString), x}, nil
	case time.Time:
		return tuple.Tuple{int64(vTime), x.Unix(), int64(x.Nanosecond())}, nil
	case time.Duration:
		return tuple.Tuple{int64(vDuration), int64(x)}, nil
	}
	return nil, fmt.Errorf("a value of type %T", v)
}

var errMalformedCall = errors.New("fdbqueue: a malformed forwarded statement or answer")

func unwireValue(e any) (any, error) {
	t, ok := e.(tuple.Tuple)
	if !ok || len(t) == 0 {
		return nil, errMalformedCall
	}
	kind, _ := t[0].(int64)
	switch {
	case kind == vNil && len(t) == 1:
		return nil, nil
	case kind == vInt && len(t) == 2:
		if x, ok := t[1].(int64); ok {
			return x, nil
		}
	case kind == vFloat && len(t) == 2:
		if x, ok := t[1].(float64); ok {
			return x, nil
		}
	case kind == vBool && len(t) == 2:
		if x, ok := t[1].(bool); ok {
			return x, nil
		}
	case kind == vBytes && len(t) == 2:
		if x, ok := t[1].([]byte); ok {
			return x, nil
		}
	case kind == vString && len(t) == 2:
		if x, ok := t[1].(string); ok {
			return x, nil
		}
	case kind == vTime && len(t) == 3:
		sec, ok1 := t[1].(int64)
		nsec, ok2 := t[2].(int64)
		if ok1 && ok2 {
			return time.Unix(sec, nsec).UTC(), nil
		}
	case kind == vDuration && len(t) == 2:
		if x, ok := t[1].(int64); ok {
			return time.Duration(x), nil
		}
	}
	return nil, errMalformedCall
}

func wireValues(vs []any) (tuple.Tuple, error) {
	out := make(tuple.Tuple, len(vs))
	for i, v := range vs {
		t, err := wireValue(v)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func unwireValues(e any) ([]any, error) {
	t, ok := e.(tuple.Tuple)
	if !ok {
		return nil, errMalformedCall
	}
	out := make([]any, len(t))
	for i, x := range t {
		v, err := unwireValue(x)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// encodeCall encodes b, bound to args, for the serving process, with what
// is left of its wait and of ctx.
func encodeCall(b *bound, args Args, waitLeft time.Duration, ctx context.Context) ([]byte, error) {
	pos, err := wireValues(args.Positional)
	if err != nil {
		return nil, err
	}
	named := tuple.Tuple{}
	for n, v := range args.Named {
		t, err := wireValue(v)
		if err != nil {
			return nil, err
		}
		named = append(named, n, t)
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 1)
	}
	return tuple.Tuple{int64(forwardVersion), b.p.Text, args.Positional != nil, pos, named,
		b.token.ID, b.token.At.UnixNano(), b.token.Unsure, int64(waitLeft), int64(timeout)}.PackWithError()
}

func decodeCall(req []byte) (*call, error) {
	t, err := tuple.Unpack(req)
	if err != nil || len(t) != 10 {
		return nil, errMalformedCall
	}
	ver, _ := t[0].(int64)
	text, ok1 := t[1].(string)
	hasPos, ok2 := t[2].(bool)
	named, ok3 := t[4].(tuple.Tuple)
	id, ok4 := t[5].(int64)
	at, ok5 := t[6].(int64)
	unsure, ok6 := t[7].(bool)
	wait, ok7 := t[8].(int64)
	timeout, ok8 := t[9].(int64)
	if ver != forwardVersion || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || !ok8 || len(named)%2 != 0 {
		return nil, errMalformedCall
	}
	c := &call{text: text, token: queues.Token{ID: id, At: time.Unix(0, at), Unsure: unsure}, waitLeft: time.Duration(wait), timeout: time.Duration(timeout)}
	pos, err := unwireValues(t[3])
	if err != nil {
		return nil, err
	}
	if hasPos {
		c.args.Positional = pos
	}
	for i := 0; i < len(named); i += 2 {
		n, ok := named[i].(string)
		if !ok {
			return nil, errMalformedCall
		}
		v, err := unwireValue(named[i+1])
		if err != nil {
			return nil, err
		}
		if c.args.Named == nil {
			c.args.Named = map[string]any{}
		}
		c.args.Named[n] = v
	}
	return c, nil
}

// forwardSentinels are the errors that keep their identity (errors.Is)
// across a forwarded statement, by their index here. Append only.
var forwardSentinels = []error{
	context.Canceled, context.DeadlineExceeded,
	ErrNoTable, ErrTableExists, ErrSchema, ErrCatalog, ErrArgs, ErrUnknownColumn, ErrStatement,
	ErrValue, ErrDuplicateID, ErrDuplicateKey, ErrUnreadableRow, ErrPutBack,
	parser.ErrSyntax, parser.ErrUnsupported, queues.ErrInvalidItem, queues.ErrCorrupt,
	kv.ErrNoMetadataVersion,
}

// Outcomes.
const (
	outResult = 1
	outError  = 2
)

// encodeOutcome encodes a statement's result, or its error.
func encodeOutcome(res *Result, err error) []byte {
	if err == nil {
		b, perr := encodeResult(res)
		if perr == nil {
			return b
		}
		err = fmt.Errorf("fdbqueue: the statement's result could not be sent to the process that forwarded it: %w", perr)
	}
	var codes tuple.Tuple
	kv.WalkErrors(err, func(x error) {
		if ke, ok := x.(*kv.Error); ok && len(codes) < 2*16 {
			codes = append(codes, int64(ke.Code), ke.Detail)
		}
	})
	var mask int64
	for i, s := range forwardSentinels {
		if errors.Is(err, s) {
			mask |= 1 << i
		}
	}
	return tuple.Tuple{int64(outError), err.Error(), codes, mask}.Pack()
}

// forwardedError is the error of a statement that ran in another process:
// its text, and the parts errors.Is and kv's predicates look for.
type forwardedError struct {
	msg   string
	parts []error
}

func (e *forwardedError) Error() string   { return e.msg }
func (e *forwardedError) Unwrap() []error { return e.parts }

func encodeResult(res *Result) ([]byte, error) {
	types := make(tuple.Tuple, len(res.Types))
	for i, t := range res.Types {
		types[i] = int64(t)
	}
	cols := make(tuple.Tuple, len(res.Columns))
	for i, c := range res.Columns {
		cols[i] = c
	}
	nullable := make(tuple.Tuple, len(res.Nullable))
	for i, n := range res.Nullable {
		nullable[i] = n
	}
	lengths := make(tuple.Tuple, len(res.Lengths))
	for i, n := range res.Lengths {
		lengths[i] = int64(n)
	}
	rows := make(tuple.Tuple, len(res.Rows))
	for i, r := range res.Rows {
		t, err := wireValues(r)
		if err != nil {
			return nil, err
		}
		rows[i] = t
	}
	var table any
	if res.popped.t != nil {
		items := make(tuple.Tuple, len(res.popped.rows))
		for i, r := range res.popped.rows {
			items[i] = encodeItem(r.item)
		}
		table = tuple.Tuple{res.popped.t.Name, res.popped.t.ID, items}
	}
	return tuple.Tuple{int64(outResult), res.HasRows, cols, types, nullable, lengths, rows,
		res.RowsAffected, res.LastInsertID, table}.PackWithError()
}

// each returns the elements of t, each of which must be a T.
func each[T any](t tuple.Tuple) ([]T, bool) {
	var out []T
	for _, e := range t {
		v, ok := e.(T)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

func encodeTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return tuple.Tuple{t.Unix(), int64(t.Nanosecond())}
}

func decodeTime(e any) (time.Time, bool) {
	if e == nil {
		return time.Time{}, true
	}
	t, ok := e.(tuple.Tuple)
	if !ok || len(t) != 2 {
		return time.Time{}, false
	}
	sec, ok1 := t[0].(int64)
	nsec, ok2 := t[1].(int64)
	return time.Unix(sec, nsec).UTC(), ok1 && ok2
}

func encodeItem(it queues.Item) tuple.Tuple {
	res := make(tuple.Tuple, len(it.Resources))
	for i, r := range it.Resources {
		res[i] = r
	}
	v := it.Value
	if v == nil {
		v = []byte{}
	}
	return tuple.Tuple{it.ID, it.Priority, res, v, encodeTime(it.VisibleAt), it.Lease, it.Attempts, it.Seq, encodeTime(it.PushedAt), it.Held}
}

func decodeItem(e any) (queues.Item, error) {
	t, ok := e.(tuple.Tuple)
	if !ok || len(t) != 10 {
		return queues.Item{}, errMalformedCall
	}
	var it queues.Item
	var oks [10]bool
	it.ID, oks[0] = t[0].(int64)
	it.Priority, oks[1] = t[1].(int64)
	res, ok := t[2].(tuple.Tuple)
	it.Resources, oks[2] = each[int64](res)
	oks[2] = oks[2] && ok
	it.Value, oks[3] = t[3].([]byte)
	it.VisibleAt, oks[4] = decodeTime(t[4])
	it.Lease, oks[5] = t[5].(int64)
	it.Attempts, oks[6] = t[6].(int64)
	it.Seq, oks[7] = t[7].(int64)
	it.PushedAt, oks[8] = decodeTime(t[8])
	it.Held, oks[9] = t[9].(bool)
	for _, ok := range oks {
		if !ok {
			return queues.Item{}, errMalformedCall
		}
	}
	return it, nil
}

// decodeOutcome decodes what encodeOutcome encoded: the statement's result
// or its error.
func decodeOutcome(b []byte) (*Result, error) {
	t, err := tuple.Unpack(b)
	if err != nil || len(t) == 0 {
		return nil, errMalformedCall
	}
	kind, _ := t[0].(int64)
	switch {
	case kind == outError && len(t) == 4:
		msg, ok1 := t[1].(string)
		codes, ok2 := t[2].(tuple.Tuple)
		mask, ok3 := t[3].(int64)
		if !ok1 || !ok2 || !ok3 || len(codes)%2 != 0 {
			return nil, errMalformedCall
		}
		fe := &forwardedError{msg: msg}
		for i := 0; i < len(codes); i += 2 {
			code, ok1 := codes[i].(int64)
			detail, ok2 := codes[i+1].(string)
			if !ok1 || !ok2 || code < 0 || code > math.MaxInt32 {
				return nil, errMalformedCall
			}
			fe.parts = append(fe.parts, &kv.Error{Code: int(code), Detail: detail})
		}
		for i, s := range forwardSentinels {
			if mask&(1<<i) != 0 {
				fe.parts = append(fe.parts, s)
			}
		}
		return nil, fe
	case kind == outResult && len(t) == 10:
	default:
		return nil, errMalformedCall
	}
	res := &Result{}
	var oks [8]bool
	res.HasRows, oks[0] = t[1].(bool)
	cols, ok := t[2].(tuple.Tuple)
	oks[1] = ok
	types, ok := t[3].(tuple.Tuple)
	oks[2] = ok
	nullable, ok := t[4].(tuple.Tuple)
	oks[3] = ok
	lengths, ok := t[5].(tuple.Tuple)
	oks[4] = ok
	rows, ok := t[6].(tuple.Tuple)
	oks[5] = ok
	res.RowsAffected, oks[6] = t[7].(int64)
	res.LastInsertID, oks[7] = t[8].(int64)
	for _, ok := range oks {
		if !ok {
			return nil, errMalformedCall
		}
	}
	var ok1, ok2, ok3, ok4 bool
	var types64, lengths64 []int64
	res.Columns, ok1 = each[string](cols)
	types64, ok2 = each[int64](types)
	res.Nullable, ok3 = each[bool](nullable)
	lengths64, ok4 = each[int64](lengths)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, errMalformedCall
	}
	for _, n := range types64 {
		res.Types = append(res.Types, parser.Type(n))
	}
	for _, n := range lengths64 {
		res.Lengths = append(res.Lengths, int(n))
	}
	for _, r := range rows {
		vs, err := unwireValues(r)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, vs)
	}
	if t[9] != nil {
		table, ok := t[9].(tuple.Tuple)
		if !ok || len(table) != 3 {
			return nil, errMalformedCall
		}
		name, ok1 := table[0].(string)
		id, ok2 := table[1].(int64)
		items, ok3 := table[2].(tuple.Tuple)
		if !ok1 || !ok2 || !ok3 {
			return nil, errMalformedCall
		}
		res.popped.t = &Table{Name: name, ID: id}
		for _, x := range items {
			it, err := decodeItem(x)
			if err != nil {
				return nil, err
			}
			res.popped.rows = append(res.popped.rows, row{item: it})
		}
	}
	return res, nil
}
