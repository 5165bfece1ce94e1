package bench

// fdbqueue bench's fsync probe: what one durable commit costs at least on
// the disk under a file: database.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

// fsyncBytes is what the probe writes before each fsync: about one commit
// record of a single-row push.
const fsyncBytes = 128

// measureFsync writes fsyncBytes after the last write in a new file in dir
// and fsyncs it, reps times, as the write-ahead log does for a commit: into
// space the file already has, written with zeros (the log writes its
// segments' space ahead of the records), so that the fsync does not also
// make a new file size or newly allocated blocks durable. The file is named
// *.tmp, which the engine's recovery removes should the bench die before
// it does.
func measureFsync(ctx context.Context, dir string, reps int) (res fsyncResult, err error) {
	f, err := os.CreateTemp(dir, "fdbqueue-bench-fsync-*.tmp")
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if rerr := os.Remove(f.Name()); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if _, err := f.Write(make([]byte, reps*fsyncBytes)); err != nil {
		return res, fmt.Errorf("reserving space in %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("fsync of %s: %w", f.Name(), err)
	}
	rec := make([]byte, fsyncBytes)
	all := make([]time.Duration, 0, reps)
	for i := range reps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		t := time.Now()
		if _, err := f.WriteAt(rec, int64(i)*fsyncBytes); err != nil {
			return res, fmt.Errorf("writing %s: %w", f.Name(), err)
		}
		if err := f.Sync(); err != nil {
			return res, fmt.Errorf("fsync of %s: %w", f.Name(), err)
		}
		all = append(all, time.Since(t))
	}
	slices.Sort(all)
	n := len(all)
	return fsyncResult{
		Bench: "fsync", Reps: reps, Samples: int64(n), Bytes: fsyncBytes,
		MedianMS: (ms(all[(n-1)/2]) + ms(all[n/2])) / 2,
		P99MS:    pct(all, 99), MinMS: ms(all[0]), MaxMS: ms(all[n-1]),
	}, nil
}
