package shell

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	fdbqueue "github.com/fdbqueue/fdbqueue/driver"
)

// copyToCommand runs \copy TABLE TO: a backup (see backup.go), the rows
// in queue order as CSV with a header row, which \copy FROM loads back
// unchanged. It reads, in one statement; it never pops.
func (sh *shell) copyToCommand(c copySpec) error {
	t, err := sh.copyTable(c.table)
	if err != nil {
		return err
	}
	if c.stream == "stdout" {
		n, err := sh.copyTo(t, sh.out)
		if err == nil {
			fmt.Fprintf(sh.msg, "COPY %d\n", n)
		}
		return err
	}
	f, err := os.Create(c.file)
	if err != nil {
		return err
	}
	n, err := sh.copyTo(t, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(c.file) // no half-written file that looks whole
		return err
	}
	fmt.Fprintf(sh.msg, "COPY %d\n", n)
	return nil
}

// copyTo writes t's backup columns as CSV to w and returns how many rows
// it wrote.
func (sh *shell) copyTo(t fdbqueue.TableInfo, w io.Writer) (int, error) {
	all := backupColumns(t)
	cols := make([]string, len(all))
	header := make([]csvCell, len(all))
	for i, col := range all {
		cols[i] = quoteIdent(col.Name)
		header[i] = csvCell{value: col.Name}
	}
	rows, err := sh.conn.QueryContext(sh.ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+quoteIdent(t.Name))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(appendCSV(nil, header)); err != nil {
		return 0, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	rec := make([]csvCell, len(cols))
	var line []byte
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, v := range vals {
			rec[i] = csvValue(v)
		}
		line = appendCSV(line[:0], rec)
		if _, err := bw.Write(line); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}
