package kv

import "context"

// TxnState is where an engine's transaction is in its life, for engines:
// what every operation checks first.
type TxnState int

// The states of a transaction.
const (
	TxnActive TxnState = iota
	TxnCommitted
	TxnCancelled
)

// Err returns the error an operation of a transaction in state s fails
// with: client_invalid_operation once it committed, transaction_cancelled
// once it was cancelled, or once ctx is done (joined with ctx's error);
// nil while it is active.
func (s TxnState) Err(ctx context.Context) error {
	switch s {
	case TxnCommitted:
		return Errorf(CodeClientInvalidOperation, "transaction already committed")
	case TxnCancelled:
		return Errorf(CodeTransactionCancelled, "transaction was cancelled")
	}
	if err := ctx.Err(); err != nil {
		return Join(ErrTransactionCancelled, err)
	}
	return nil
}
