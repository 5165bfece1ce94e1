package kv

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a FoundationDB error: a numeric code, as FoundationDB defines it,
// and an optional detail. Two Errors match under errors.Is when their codes
// are equal, so errors.Is(err, kv.ErrNotCommitted) works whatever the detail.
type Error struct {
	Code   int
	Detail string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("fdbqueue: %s (%d)", codeName(e.Code), e.Code)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// FoundationDB's error codes, as engines return them (FoundationDB's
// error_definitions.h names them; the errors below carry them).
const (
	CodeTransactionTooOld      = 1007 // transaction_too_old
	CodeFutureVersion          = 1009 // future_version
	CodeNotCommitted           = 1020 // not_committed
	CodeCommitUnknownResult    = 1021 // commit_unknown_result
	CodeTransactionCancelled   = 1025 // transaction_cancelled
	CodeConnectionFailed       = 1026 // connection_failed
	CodeTransactionTimedOut    = 1031 // transaction_timed_out
	CodeTooManyWatches         = 1032 // too_many_watches
	CodeAccessedUnreadable     = 1036 // accessed_unreadable
	CodeProcessBehind          = 1037 // process_behind
	CodeDatabaseLocked         = 1038 // database_locked
	CodeClusterVersionChanged  = 1039 // cluster_version_changed
	CodeProxyMemoryLimit       = 1042 // proxy_memory_limit_exceeded
	CodeBatchThrottled         = 1051 // batch_transaction_throttled
	CodeTagThrottled           = 1213 // tag_throttled
	CodeOperationCancelled     = 1101 // operation_cancelled
	CodeClientInvalidOperation = 2000 // client_invalid_operation
	CodeKeyOutsideLegalRange   = 2004 // key_outside_legal_range
	CodeInvertedRange          = 2005 // inverted_range
	CodeTransactionTooLarge    = 2101 // transaction_too_large
	CodeKeyTooLarge            = 2102 // key_too_large
	CodeValueTooLarge          = 2103 // value_too_large
	CodeRangeLimitsInvalid     = 2012 // range_limits_invalid
)

// The errors engines return, by FoundationDB code.
var (
	// ErrTransactionTooOld is returned when a transaction reads or commits
	// more than 5 seconds after its read version. Retryable.
	ErrTransactionTooOld = &Error{Code: CodeTransactionTooOld}
	// ErrFutureVersion is returned when a read version is not yet
	// available on the storage servers. Retryable.
	ErrFutureVersion = &Error{Code: CodeFutureVersion}
	// ErrNotCommitted is returned by Commit when the transaction conflicted
	// with another: something it read serializably was written after its
	// read version. Nothing was written. Retryable.
	ErrNotCommitted = &Error{Code: CodeNotCommitted}
	// ErrCommitUnknownResult is returned by Commit when the transaction may
	// or may not have been committed. Retryable, but a retry may apply the
	// transaction twice unless it is idempotent.
	ErrCommitUnknownResult = &Error{Code: CodeCommitUnknownResult}
	// ErrTransactionCancelled is returned when the transaction was
	// cancelled, or its context was done.
	ErrTransactionCancelled = &Error{Code: CodeTransactionCancelled}
	// ErrConnectionFailed is returned by kv/remote when the connection to
	// the process serving the database was lost before the operation's
	// answer came: the transaction's server side is gone, and it did not
	// commit (a commit in flight gets ErrCommitUnknownResult instead).
	// Retryable: OnError reconnects. FoundationDB's client retries its
	// connection_failed internally and never returns it to a transaction;
	// a remote client cannot, since the read version went with the server.
	ErrConnectionFailed = &Error{Code: CodeConnectionFailed}
	// ErrTransactionTimedOut is returned when the transaction's timeout
	// option expired. Not retryable.
	ErrTransactionTimedOut = &Error{Code: CodeTransactionTimedOut}
	// ErrTooManyWatches is returned by a watch created while the
	// database holds MaxWatches watches that have not fired.
	ErrTooManyWatches = &Error{Code: CodeTooManyWatches}
	// ErrAccessedUnreadable is returned by MetadataVersion in a
	// transaction that bumped the metadata version: its value is the
	// commit's versionstamp, unknown until the commit.
	ErrAccessedUnreadable = &Error{Code: CodeAccessedUnreadable}
	// ErrOperationCancelled is returned by a watch that was cancelled.
	ErrOperationCancelled = &Error{Code: CodeOperationCancelled}
	// ErrProcessBehind is returned when a storage server is too far behind.
	// Retryable.
	ErrProcessBehind = &Error{Code: CodeProcessBehind}
	// ErrClientInvalidOperation is returned when a transaction is used in a
	// way the API does not allow (after Commit, say).
	ErrClientInvalidOperation = &Error{Code: CodeClientInvalidOperation}
	// ErrKeyOutsideLegalRange is returned when a write touches the system
	// key space (keys starting with 0xff).
	ErrKeyOutsideLegalRange = &Error{Code: CodeKeyOutsideLegalRange}
	// ErrInvertedRange is returned when a range's end precedes its begin.
	ErrInvertedRange = &Error{Code: CodeInvertedRange}
	// ErrTransactionTooLarge is returned by Commit when the transaction's
	// mutations and conflict ranges exceed 10,000,000 bytes.
	ErrTransactionTooLarge = &Error{Code: CodeTransactionTooLarge}
	// ErrKeyTooLarge is returned by Commit when a written key exceeds
	// 10,000 bytes.
	ErrKeyTooLarge = &Error{Code: CodeKeyTooLarge}
	// ErrValueTooLarge is returned by Commit when a written value exceeds
	// 100,000 bytes.
	ErrValueTooLarge = &Error{Code: CodeValueTooLarge}
)

func codeName(code int) string {
	switch code {
	case CodeTransactionTooOld:
		return "transaction_too_old: the transaction ran for more than 5 seconds"
	case CodeFutureVersion:
		return "future_version"
	case CodeNotCommitted:
		return "not_committed: transaction conflicted with another transaction"
	case CodeCommitUnknownResult:
		return "commit_unknown_result: the transaction may or may not have committed"
	case CodeTransactionCancelled:
		return "transaction_cancelled"
	case CodeConnectionFailed:
		return "connection_failed: the connection to the server was lost"
	case CodeTransactionTimedOut:
		return "transaction_timed_out"
	case CodeTooManyWatches:
		return "too_many_watches: too many watches are waiting to fire"
	case CodeAccessedUnreadable:
		return "accessed_unreadable: read a versionstamped value before its commit"
	case CodeOperationCancelled:
		return "operation_cancelled"
	case CodeProcessBehind:
		return "process_behind"
	case CodeDatabaseLocked:
		return "database_locked"
	case CodeClusterVersionChanged:
		return "cluster_version_changed: the commit's outcome is unknown"
	case CodeProxyMemoryLimit:
		return "proxy_memory_limit_exceeded"
	case CodeBatchThrottled:
		return "batch_transaction_throttled"
	case CodeTagThrottled:
		return "tag_throttled"
	case CodeClientInvalidOperation:
		return "client_invalid_operation"
	case CodeKeyOutsideLegalRange:
		return "key_outside_legal_range: keys starting with 0xff are reserved"
	case CodeInvertedRange:
		return "inverted_range"
	case CodeRangeLimitsInvalid:
		return "range_limits_invalid"
	case CodeTransactionTooLarge:
		return "transaction_too_large: a transaction may write at most 10,000,000 bytes"
	case CodeKeyTooLarge:
		return "key_too_large: keys are at most 10,000 bytes"
	case CodeValueTooLarge:
		return "value_too_large: values are at most 100,000 bytes"
	}
	return "error"
}

// Code returns the FoundationDB error code in err's chain, or 0.
func Code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// IsRetryable reports whether a transaction that failed with err may be
// retried: FoundationDB's "retryable" predicate (fdb_error_predicate), that
// is the maybe-committed codes and not_committed (1020),
// transaction_too_old (1007), future_version (1009), process_behind (1037),
// database_locked (1038), proxy_memory_limit_exceeded (1042),
// batch_transaction_throttled (1051) and tag_throttled (1213). (FoundationDB
// 7.3 adds a few throttling codes; a client that meets one treats it as
// final.) It also holds for connection_failed (1026), which FoundationDB's
// client retries itself and kv/remote returns (ErrConnectionFailed). A
// retry after a maybe-committed error may apply the transaction a second
// time; see IsMaybeCommitted.
func IsRetryable(err error) bool {
	switch Code(err) {
	case CodeTransactionTooOld, CodeFutureVersion, CodeNotCommitted, CodeProcessBehind,
		CodeDatabaseLocked, CodeProxyMemoryLimit, CodeBatchThrottled, CodeTagThrottled,
		CodeConnectionFailed:
		return true
	}
	return IsMaybeCommitted(err)
}

// IsMaybeCommitted reports whether err leaves it unknown whether the
// transaction committed: it holds, anywhere in its chain (errors.Join
// included), commit_unknown_result (1021) or cluster_version_changed
// (1039), FoundationDB's "maybe committed" codes. An attempt that may have
// been applied stays so whatever error ends the retries after it.
func IsMaybeCommitted(err error) bool {
	return anyCode(err, func(c int) bool {
		return c == CodeCommitUnknownResult || c == CodeClusterVersionChanged
	})
}

// anyCode reports whether an *Error in err's tree has a code that pred
// accepts.
func anyCode(err error, pred func(int) bool) bool {
	if e, ok := err.(*Error); ok && pred(e.Code) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return anyCode(u.Unwrap(), pred)
	case interface{ Unwrap() []error }:
		for _, x := range u.Unwrap() {
			if anyCode(x, pred) {
				return true
			}
		}
	}
	return false
}

// IsRetryableNotCommitted reports whether err is retryable and the
// transaction certainly did not commit.
func IsRetryableNotCommitted(err error) bool {
	return IsRetryable(err) && !IsMaybeCommitted(err)
}

// Errorf returns an *Error with code and a formatted detail, for engines.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Join returns an error that wraps errs, leaving out the nil ones (nil if
// all are), as errors.Join does, but whose text is theirs on one line,
// joined by "; ": errors end up in one-line logs.
func Join(errs ...error) error {
	var j joinError
	for _, err := range errs {
		if err != nil {
			j.errs = append(j.errs, err)
		}
	}
	if len(j.errs) == 0 {
		return nil
	}
	return &j
}

type joinError struct{ errs []error }

func (e *joinError) Error() string {
	var b strings.Builder
	for i, err := range e.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e *joinError) Unwrap() []error { return e.errs }

// WalkErrors calls f on err and on every error in its tree (Unwrap() error
// and Unwrap() []error), depth first: what errors.Is visits, for code that
// must see each one (the error codes a remote answer carries).
func WalkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		WalkErrors(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, x := range u.Unwrap() {
			WalkErrors(x, f)
		}
	}
}
