//go:build fdb

package fdbshim

import (
	"errors"

	"github.com/fdbqueue/fdbqueue/kv"
)

// FoundationDB's error codes that the test double returns
// (error_definitions.h names them).
const (
	errTransactionTooOld         = 1007
	errFutureVersion             = 1009
	errNotCommitted              = 1020
	errCommitUnknownResult       = 1021
	errTransactionCancelled      = 1025
	errTransactionTimedOut       = 1031
	errTooManyWatches            = 1032
	errAccessedUnreadable        = 1036
	errProcessBehind             = 1037
	errDatabaseLocked            = 1038
	errCommitProxyMemoryLimit    = 1042
	errBatchTransactionThrottled = 1051
	errGRVProxyMemoryLimit       = 1078
	errBlobGranuleRequestFailed  = 1079
	errTagThrottled              = 1213
	errProxyTagThrottled         = 1223
	errNoClusterFileFound        = 1515
	errFileNotReadable           = 1513
	errClientInvalidOperation    = 2000
	errKeyOutsideLegalRange      = 2004
	errInvertedRange             = 2005
	errInvalidOptionValue        = 2006
	errInvalidOption             = 2007
	errRangeLimitsInvalid        = 2012
	errUsedDuringCommit          = 2017
	errInvalidMutationType       = 2018
	errKeyTooLarge               = 2102
	errValueTooLarge             = 2103
	errConnectionStringInvalid   = 2104
	errUnsupportedOperation      = 2108
	errTenantNotFound            = 2131
	errInvalidTenantName         = 2134
	errExactModeWithoutLimits    = 2210
	errInternal                  = 4100
)

// FoundationDB's limits (ClientKnobs: KEY_SIZE_LIMIT, VALUE_SIZE_LIMIT).
const (
	keySizeLimit   = 10_000
	valueSizeLimit = 100_000
)

// codeOf turns an error of the embedded engine into the code the real
// client would report. Engine errors carry FoundationDB's codes already;
// anything else is an internal error.
func codeOf(err error) int {
	var e *kv.Error
	if errors.As(err, &e) && e.Code != 0 {
		return e.Code
	}
	return errInternal
}

// retryClass is what FoundationDB's Transaction::onError does with a code
// (NativeAPI.actor.cpp): back off exponentially, retry after a short fixed
// delay, or give the error back.
type retryClass int

const (
	noRetry retryClass = iota
	retryBackoff
	retryShort
)

func classify(code int) retryClass {
	switch code {
	case errNotCommitted, errCommitUnknownResult, errDatabaseLocked, errCommitProxyMemoryLimit,
		errGRVProxyMemoryLimit, errProcessBehind, errBatchTransactionThrottled, errTagThrottled,
		errBlobGranuleRequestFailed, errProxyTagThrottled:
		return retryBackoff
	case errTransactionTooOld, errFutureVersion:
		return retryShort
	}
	return noRetry
}
