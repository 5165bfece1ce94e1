package embedded_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/kv"
	"github.com/fdbqueue/fdbqueue/kv/embedded"
)

// TestReusedBuffersKeepConflicts: a transaction's buffers are reused by
// the next ones once it commits, and the history of its commit must not
// change with them. A transaction that read a key before another
// committed a write to it fails to commit with not_committed, however
// many transactions wrote other keys since (in the buffers the first
// writer used), on memory: and file:.
func TestReusedBuffersKeepConflicts(t *testing.T) {
	t.Parallel()
	onMemoryAndFile(t, embedded.Config{RetryLimit: -1}, func(t *testing.T, db *embedded.DB) {
		ctx := context.Background()
		for round := range 20 {
			key := fmt.Appendf(nil, "k/%03d", round)
			reader, err := db.CreateTransaction(ctx)
			require.NoError(t, err)
			_, err = reader.Get(key) // its read version is before the write
			require.NoError(t, err)

			// The write to key, among others (a plain set is built
			// ahead, an ADD is not), then transactions writing
			// other keys of the same lengths.
			require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
				for i := range 50 {
					tr.Set(fmt.Appendf(nil, "a/%03d/%03d", round, i), []byte("v"))
				}
				if round%2 == 0 {
					tr.Set(key, []byte("v"))
				} else {
					tr.Add(key, 1)
				}
				return nil
			}))
			for other := range 10 {
				require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
					for i := range 51 {
						tr.Set(fmt.Appendf(nil, "z/%03d/%03d", other, i), []byte("w"))
					}
					tr.Add(fmt.Appendf(nil, "z/%03d", other), 1)
					return nil
				}))
			}

			reader.Set([]byte("r"), []byte("x"))
			err = reader.Commit()
			require.Error(t, err, "round %d: the read of %s conflicts with the write committed after it", round, key)
			require.True(t, kv.IsRetryable(err), "round %d: %v", round, err)
			reader.Cancel()
		}
	})
}

// onMemoryAndFile runs test, in parallel, on a memory: database and on a
// file: one (OpenFile: a write-ahead log, group commit) in a temporary
// directory, opened with cfg.
func onMemoryAndFile(t *testing.T, cfg embedded.Config, test func(t *testing.T, db *embedded.DB)) {
	onMemoryAndFileReopen(t, cfg, test, nil)
}

// onMemoryAndFileReopen is onMemoryAndFile, then, if check is not nil,
// check on the database: on file:, closed and opened again (its log
// replayed).
func onMemoryAndFileReopen(t *testing.T, cfg embedded.Config, test, check func(t *testing.T, db *embedded.DB)) {
	for _, name := range []string{"memory:", "file:"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "memory:" {
				db := embedded.Open("", cfg)
				defer db.Close()
				test(t, db)
				if check != nil {
					check(t, db)
				}
				return
			}
			dir := filepath.Join(t.TempDir(), "db")
			db, err := embedded.OpenFile(dir, embedded.FileConfig{Config: cfg})
			require.NoError(t, err)
			test(t, db)
			require.NoError(t, db.Close())
			if check == nil {
				return
			}
			db, err = embedded.OpenFile(dir, embedded.FileConfig{Config: cfg})
			require.NoError(t, err)
			defer db.Close()
			check(t, db)
		})
	}
}

// TestReadOwnWritesSurviveReuse: the bytes a read returns from the
// transaction's own writes (Get, GetMany, GetRange) stay as they were after
// it commits, while later transactions write through reused buffers.
func TestReadOwnWritesSurviveReuse(t *testing.T) {
	t.Parallel()
	db := embedded.Open("", embedded.Config{})
	defer db.Close()
	ctx := context.Background()
	type kept struct{ key, val, want []byte }
	var all []kept
	for round := range 30 {
		var got []kept
		require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
			got = got[:0]
			for i := range 40 {
				tr.Set(fmt.Appendf(nil, "o/%02d/%02d", round, i), fmt.Appendf(nil, "value-%02d-%02d", round, i))
			}
			// One kind of read a round: each must keep the buffers.
			switch round % 3 {
			case 0:
				k := fmt.Appendf(nil, "o/%02d/%02d", round, 7)
				v, err := tr.Get(k)
				if err != nil {
					return err
				}
				got = append(got, kept{k, v, fmt.Appendf(nil, "value-%02d-%02d", round, 7)})
			case 1:
				vs, err := kv.GetMany(tr, [][]byte{fmt.Appendf(nil, "o/%02d/%02d", round, 8)})
				if err != nil {
					return err
				}
				got = append(got, kept{nil, vs[0], fmt.Appendf(nil, "value-%02d-%02d", round, 8)})
			default:
				rows, err := kv.Collect(tr.GetRange(kv.PrefixRange(fmt.Appendf(nil, "o/%02d/1", round)), kv.RangeOptions{}))
				if err != nil {
					return err
				}
				for i, r := range rows {
					got = append(got, kept{r.Key, r.Value, fmt.Appendf(nil, "value-%02d-%02d", round, 10+i)})
				}
			}
			return nil
		}))
		all = append(all, got...)
		for other := range 5 {
			require.NoError(t, kv.Transact(ctx, db, func(tr kv.Transaction) error {
				for i := range 40 {
					tr.Set(fmt.Appendf(nil, "p/%02d/%02d", other, i), bytes.Repeat([]byte{'#'}, 14))
				}
				return nil
			}))
		}
	}
	for _, k := range all {
		require.Equal(t, string(k.want), string(k.val))
		if k.key != nil {
			require.Equal(t, "o/", string(k.key[:2]))
		}
	}
}
