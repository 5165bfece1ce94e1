package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// copyBatch is how many rows \copy loads per transaction.
const copyBatch = 1000

// countingReader counts the bytes read through it, for the progress bar.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// copyCommand runs \copy TABLE FROM 'FILE' (or FROM STDIN): a CSV file whose
// header row names the columns; an empty field is NULL.
func (sh *shell) copyCommand(cmd string, stdin io.Reader) error {
	f := strings.Fields(cmd)
	if len(f) != 4 || !strings.EqualFold(f[2], "from") {
		return errors.New(`usage: \copy TABLE FROM 'file.csv' (or FROM STDIN)`)
	}
	table, src := f[1], f[3]
	name := "<stdin>"
	var r io.Reader = stdin
	var size int64
	if !strings.EqualFold(src, "stdin") {
		name = strings.Trim(src, `'"`)
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		if info, err := file.Stat(); err == nil {
			size = info.Size()
		}
		r = file
	}
	return sh.copyFrom(table, name, r, size)
}

func (sh *shell) copyFrom(table, name string, r io.Reader, size int64) error {
	cr := &countingReader{r: r}
	rd := csv.NewReader(cr)
	rd.FieldsPerRecord = -1
	header, err := rd.Read()
	if err != nil {
		return fmt.Errorf("%s: reading the header row: %w", name, err)
	}
	cols := make([]string, len(header))
	marks := make([]string, len(header))
	for i, h := range header {
		cols[i] = strings.TrimSpace(h)
		marks[i] = "?"
	}
	insert := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), strings.Join(marks, ", "))

	var bar *progressbar.ProgressBar
	if out, ok := sh.msg.(*os.File); ok && size >= 4<<20 && term.IsTerminal(int(out.Fd())) {
		bar = progressbar.DefaultBytes(size, "loading "+name)
	}
	loaded, rejected := 0, 0
	eof := false
	for !eof {
		if _, err := sh.conn.ExecContext(sh.ctx, "BEGIN"); err != nil {
			return err
		}
		var batchLines []int
		for len(batchLines) < copyBatch {
			rec, err := rd.Read()
			if errors.Is(err, io.EOF) {
				eof = true
				break
			}
			line, _ := rd.FieldPos(0)
			if err != nil {
				fmt.Fprintf(sh.msg, "%s:%d: %v\n", name, line, err)
				rejected++
				var pe *csv.ParseError
				if errors.As(err, &pe) && pe.Err == csv.ErrFieldCount {
					continue
				}
				if !errors.As(err, &pe) {
					_, _ = sh.conn.ExecContext(sh.ctx, "ROLLBACK")
					return err
				}
				continue
			}
			if len(rec) != len(cols) {
				fmt.Fprintf(sh.msg, "%s:%d: %d fields, the header names %d columns\n", name, line, len(rec), len(cols))
				rejected++
				continue
			}
			args := make([]any, len(rec))
			for i, v := range rec {
				if v != "" {
					args[i] = v
				}
			}
			if _, err := sh.conn.ExecContext(sh.ctx, insert, args...); err != nil {
				// The statement wrote nothing; the batch goes on.
				fmt.Fprintf(sh.msg, "%s:%d: %v\n", name, line, err)
				rejected++
				continue
			}
			batchLines = append(batchLines, line)
		}
		if _, err := sh.conn.ExecContext(sh.ctx, "COMMIT"); err != nil {
			for _, l := range batchLines {
				fmt.Fprintf(sh.msg, "%s:%d: not loaded: %v\n", name, l, err)
			}
			rejected += len(batchLines)
			if sh.ctx.Err() != nil {
				return err
			}
			continue
		}
		loaded += len(batchLines)
		if bar != nil {
			_ = bar.Set64(cr.n)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	fmt.Fprintf(sh.msg, "COPY %d", loaded)
	if rejected > 0 {
		fmt.Fprintf(sh.msg, " (%d rows rejected)", rejected)
	}
	fmt.Fprintln(sh.msg)
	return nil
}
