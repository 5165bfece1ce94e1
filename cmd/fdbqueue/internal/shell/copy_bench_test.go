package shell

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCopy loads 10,000 task rows with \copy (multi-row INSERT
// batches), against the same rows as single-row INSERTs in 1,000-row
// transactions, the baseline. On file: the difference is mostly fsyncs.
//
//	go test -run XXX -bench Copy -count 5 ./cmd/fdbqueue/
func BenchmarkCopy(b *testing.B) {
	const rows = 10_000
	var text strings.Builder
	text.WriteString("priority,cpu,mem,name\n")
	for i := range rows {
		fmt.Fprintf(&text, "%d,%d,%d,task %d\n", i%100, 1+i%16, 1+i%4096, i)
	}
	csvText := text.String()
	for _, engine := range []string{"memory", "file"} {
		for _, mode := range []string{"copy", "row-by-row"} {
			b.Run(engine+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				for b.Loop() {
					b.StopTimer()
					dsn := "memory:"
					if engine == "file" {
						dsn = "file:" + b.TempDir()
					}
					db, err := sql.Open("fdbqueue", dsn)
					require.NoError(b, err)
					conn, err := db.Conn(ctx)
					require.NoError(b, err)
					_, err = conn.ExecContext(ctx, "CREATE TABLE tasks (priority INT NOT NULL, cpu INT NOT NULL, mem INT NOT NULL, name TEXT, INDEX fit (cpu, mem))")
					require.NoError(b, err)
					b.StartTimer()
					if mode == "copy" {
						sh := &shell{ctx: ctx, conn: conn, out: io.Discard, msg: io.Discard, format: printer{}, opts: &options{}}
						require.NoError(b, sh.copyFrom("tasks", "bench.csv", strings.NewReader(csvText), 0))
					} else {
						loadRowByRow(b, conn, csvText)
					}
					b.StopTimer()
					require.NoError(b, conn.Close())
					require.NoError(b, db.Close())
					b.StartTimer()
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// loadRowByRow is the baseline: one INSERT per row, 1,000 per transaction.
func loadRowByRow(b *testing.B, conn *sql.Conn, csvText string) {
	ctx := context.Background()
	lines := strings.Split(strings.TrimSpace(csvText), "\n")[1:]
	for start := 0; start < len(lines); start += copyBatch {
		_, err := conn.ExecContext(ctx, "BEGIN")
		require.NoError(b, err)
		for _, l := range lines[start:min(start+copyBatch, len(lines))] {
			f := strings.Split(l, ",")
			_, err := conn.ExecContext(ctx, "INSERT INTO tasks (priority, cpu, mem, name) VALUES (?, ?, ?, ?)", f[0], f[1], f[2], f[3])
			require.NoError(b, err)
		}
		_, err = conn.ExecContext(ctx, "COMMIT")
		require.NoError(b, err)
	}
}
