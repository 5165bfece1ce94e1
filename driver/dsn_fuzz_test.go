package driver_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"memory:", "memory:x", "file:/tmp/q?sync=full", "fdb:/etc/fdb.cluster?root=a&tenant=b", "fdb:?x=%zz", "", ":", "memory:?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		cfg, err := fdbqueue.ParseDSN(dsn)
		if err != nil {
			require.True(t, errors.Is(err, fdbqueue.ErrDSN), "unclassified error %v", err)
			return
		}
		// What parses formats back to a DSN that parses the same.
		again, err := fdbqueue.ParseDSN(cfg.String())
		require.NoError(t, err, "%q -> %q", dsn, cfg.String())
		require.Equal(t, cfg, again)
	})
}
