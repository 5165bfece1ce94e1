package bench

// fdbqueue bench's progress line, for long fills on a terminal.

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress shows how far a long fill got, on one line of standard error
// rewritten in place, when standard error is a terminal.
type progress struct {
	w     io.Writer // nil: no progress shown
	every time.Duration
}

func newProgress(stderr io.Writer) *progress {
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &progress{w: stderr, every: 250 * time.Millisecond}
	}
	return &progress{}
}

// progressLine is one fill's progress line.
type progressLine struct {
	p       *progress
	label   string
	total   int
	start   time.Time
	last    time.Time
	printed bool
}

func (p *progress) start(label string, total int) *progressLine {
	now := time.Now()
	return &progressLine{p: p, label: label, total: total, start: now, last: now}
}

// update shows done of total, at most every p.every, and not before p.every
// has passed: a short fill shows nothing.
func (l *progressLine) update(done int) {
	if l.p.w == nil || time.Since(l.last) < l.p.every {
		return
	}
	l.last = time.Now()
	l.printed = true
	pct := 100.0
	if l.total > 0 {
		pct = 100 * float64(done) / float64(l.total)
	}
	fmt.Fprintf(l.p.w, "\rfdbqueue bench: %s %d/%d (%.0f%%, %.0fs)\x1b[K", l.label, done, l.total, pct, time.Since(l.start).Seconds())
}

// finish erases the line, if it was shown.
func (l *progressLine) finish() {
	if l.printed {
		fmt.Fprint(l.p.w, "\r\x1b[K")
	}
}
