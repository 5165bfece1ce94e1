//go:build fdb

package fdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/fdbqueue/fdbqueue/kv"
)

// mapError turns the bindings' errors into kv's: the code, and the client
// library's description of it as the detail.
func mapError(err error) error {
	var fe fdb.Error
	if errors.As(err, &fe) {
		return &kv.Error{Code: fe.Code, Detail: description(fe)}
	}
	return err
}

// description is the client library's text for an error (fdb_get_error),
// without the code that kv.Error prints already.
func description(fe fdb.Error) string {
	s := fe.Error()
	prefix := fmt.Sprintf("FoundationDB error code %d (", fe.Code)
	if strings.HasPrefix(s, prefix) && strings.HasSuffix(s, ")") {
		return "FoundationDB: " + s[len(prefix):len(s)-1]
	}
	return s
}

// mapErr maps an error of one of the transaction's operations. FoundationDB
// reports a done context as transaction_cancelled (the context's
// cancellation cancels the transaction) or transaction_timed_out (its
// deadline is the transaction's timeout); the kv contract reports
// ErrTransactionCancelled joined with the context's error.
func (t *txn) mapErr(err error) error {
	e := mapError(err)
	switch kv.Code(e) {
	case kv.CodeTransactionCancelled, kv.CodeTransactionTimedOut:
		if cerr := t.ctx.Err(); cerr != nil {
			return kv.Join(kv.Errorf(kv.CodeTransactionCancelled, "the context is done"), cerr)
		}
		if kv.Code(e) == kv.CodeTransactionTimedOut && t.deadlineTimeout {
			// FoundationDB's timer fired a little before the
			// context's.
			return kv.Join(kv.Errorf(kv.CodeTransactionCancelled, "the context's deadline passed"), context.DeadlineExceeded)
		}
	}
	return e
}
