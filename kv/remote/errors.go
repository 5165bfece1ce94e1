// Errors on the wire, and the errors of a lost connection.

package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// sentinels are the errors that keep their identity (errors.Is) across the
// wire, by their index here: the context's, which the engines join to
// transaction_cancelled, kv's ErrNoMetadataVersion, which callers compare
// with ==, and the embedded engine's ErrFailed (which its OnError never
// retries) and ErrReadOnly. Append only: the index is the protocol.
var sentinels = []error{
	context.Canceled,
	context.DeadlineExceeded,
	kv.ErrNoMetadataVersion,
	embedded.ErrFailed,
	embedded.ErrReadOnly,
	ErrNoCalls,
}

// maxCodes bounds the *kv.Errors an error carries besides its first.
const maxCodes = 16

// Error encodings.
const (
	errSentinel = 1 // the sentinel itself: its index
	errGeneral  = 2 // code, detail, text, more codes, sentinels matched
)

// encodeErr appends err (not nil). A *kv.Error arrives as one, code and
// detail unchanged; any other error arrives with its text, the *kv.Errors
// in its tree (so that kv.Code, errors.Is and kv.IsMaybeCommitted answer
// as they did), and the sentinels it matched under errors.Is.
func encodeErr(e *enc, err error) {
	for i, s := range sentinels {
		if err == s {
			e.u8(errSentinel)
			e.uvarint(uint64(i))
			return
		}
	}
	e.u8(errGeneral)
	var first *kv.Error
	errors.As(err, &first)
	var codes []*kv.Error
	kv.WalkErrors(err, func(x error) {
		if ke, ok := x.(*kv.Error); ok && ke != first && len(codes) < maxCodes {
			codes = append(codes, ke)
		}
	})
	if first != nil {
		e.uvarint(uint64(first.Code))
		e.str(clip(first.Detail))
	} else {
		e.uvarint(0)
		e.str("")
	}
	msg := ""
	if first == nil || err.Error() != first.Error() {
		msg = clip(err.Error())
		if msg == "" {
			msg = "error"
		}
	}
	e.str(msg)
	e.uvarint(uint64(len(codes)))
	for _, ke := range codes {
		e.uvarint(uint64(ke.Code))
		e.str(clip(ke.Detail))
	}
	var mask uint64
	for i, s := range sentinels {
		if errors.Is(err, s) {
			mask |= 1 << i
		}
	}
	e.uvarint(mask)
}

func clip(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage]
	}
	return s
}

// decodeErr reads what encodeErr wrote.
func decodeErr(d *dec) error {
	switch d.u8() {
	case errSentinel:
		i := d.uvarint()
		if i >= uint64(len(sentinels)) {
			d.fail()
			return errMalformed
		}
		return sentinels[i]
	case errGeneral:
	default:
		d.fail()
		return errMalformed
	}
	code := int(d.uvarint())
	detail := d.str()
	msg := d.str()
	n := d.count(2)
	var first *kv.Error
	if code != 0 {
		first = &kv.Error{Code: code, Detail: detail}
	}
	var parts []error
	if first != nil {
		parts = append(parts, first)
	}
	for range n {
		c := int(d.uvarint())
		parts = append(parts, &kv.Error{Code: c, Detail: d.str()})
	}
	mask := d.uvarint()
	for i, s := range sentinels {
		if mask&(1<<i) != 0 {
			parts = append(parts, s)
		}
	}
	if d.err != nil {
		return errMalformed
	}
	if msg == "" && first != nil && len(parts) == 1 {
		return first
	}
	if msg == "" {
		msg = "error"
	}
	return &wireError{msg: msg, parts: parts}
}

// wireError is an error that crossed the wire: its text, and the parts of
// its tree that errors.Is, errors.As and kv's predicates look for.
type wireError struct {
	msg   string
	parts []error
}

func (e *wireError) Error() string   { return e.msg }
func (e *wireError) Unwrap() []error { return e.parts }

// The errors of a lost connection. The cause is why it was lost.

// errLost is the error of an operation whose connection was lost before its
// answer came, or of a transaction that has no connection: its server side
// is gone, and it committed nothing.
func errLost(cause error) error {
	return kv.Errorf(kv.CodeConnectionFailed, "the connection to the server was lost (%v); the transaction did not commit, and OnError retries it on a new connection", cause)
}

// errLostCommit is the error of a commit in flight when its connection was
// lost: the server may have applied it.
func errLostCommit(cause error) error {
	return kv.Errorf(kv.CodeCommitUnknownResult, "the connection to the server was lost (%v) while the commit was in flight: it may or may not have been applied", cause)
}

// errClosed is the cause of everything a closed DB ends.
var errClosed = errors.New("the kv/remote database handle was closed")

// errLostCall is the error of a call in flight when its connection was
// lost: the server may have done what it asked.
func errLostCall(cause error) error {
	return kv.Errorf(kv.CodeCommitUnknownResult, "the connection to the server was lost (%v) while a call was in flight: it may or may not have been applied", cause)
}

// errServerClosed is the cause of the connections a closed Server ends.
var errServerClosed = errors.New("the server was closed")

// VersionError is returned by Dial (and ends reconnecting) when the server
// speaks another protocol version or runs another version of fdbqueue.
type VersionError struct {
	ClientProtocol, ServerProtocol int
	ClientVersion, ServerVersion   string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("fdbqueue: kv/remote: the server runs fdbqueue %s (protocol %d), this client fdbqueue %s (protocol %d); both processes must run the same version",
		e.ServerVersion, e.ServerProtocol, e.ClientVersion, e.ClientProtocol)
}
