//go:build !fdb

package driver_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// TestFDBEngine: a build without -tags fdb has no FoundationDB engine, and
// says so, and how to get it.
func TestFDBEngine(t *testing.T) {
	t.Parallel()
	_, err := sql.Open("fdbqueue", "fdb:")
	require.ErrorIs(t, err, fdbqueue.ErrEngine, "sql.Open reports the connector's error")
	require.ErrorContains(t, err, "-tags fdb")
	_, err = fdbqueue.NewConnector(&fdbqueue.Config{Engine: fdbqueue.EngineFDB, Params: map[string]string{}})
	require.ErrorIs(t, err, fdbqueue.ErrEngine)
	require.ErrorContains(t, err, "-tags fdb")
}
