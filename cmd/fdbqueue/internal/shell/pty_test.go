//go:build !windows

package shell

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// terminal is the shell running on a pseudo-terminal. A goroutine drains the
// terminal into a buffer, so a test waiting for output never blocks in Read:
// it polls the buffer until the text shows up or its deadline passes.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	seen int // expect consumed output up to here
	done chan struct{}
}

// ansi matches the terminal control sequences the line editor writes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func startTerminal(t *testing.T, env ...string) *terminal {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"FDBQUEUE_SHELL_MAIN=1", "TERM=xterm"}, env...)...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	require.NoError(t, err)
	term := &terminal{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			term.mu.Lock()
			term.buf.Write(b[:n])
			term.mu.Unlock()
			if err != nil {
				return // EIO once the shell has exited
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = tty.Close()
	})
	return term
}

// output is everything the terminal showed so far, without control sequences
// and carriage returns.
func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.ReplaceAll(ansi.ReplaceAllString(term.buf.String(), ""), "\r", "")
}

// expect waits until want appears after what earlier calls consumed, and
// returns the output up to and including it.
func (term *terminal) expect(want string) string {
	term.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := term.output()
		if i := strings.Index(out[term.seen:], want); i >= 0 {
			got := out[term.seen : term.seen+i+len(want)]
			term.seen += i + len(want)
			return got
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the shell did not print %q; after the last match it printed:\n%s", want, out[term.seen:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// send types keys at the terminal.
func (term *terminal) send(keys string) {
	term.t.Helper()
	_, err := term.tty.Write([]byte(keys))
	require.NoError(term.t, err)
}

// prompt is the main prompt as it appears at the start of a line; the line
// editor also redraws it after every key, but never after a newline.
const prompt = "\nfdbqueue> "

// enter types a line and Enter, and returns what the shell printed between
// the line and the next main prompt.
func (term *terminal) enter(line string) string {
	term.t.Helper()
	term.send(line + "\r")
	term.expect(line + "\n")
	out := term.expect(prompt)
	return strings.TrimSuffix(out, prompt)
}

// wait waits for the shell to exit and returns its status.
func (term *terminal) wait() int {
	term.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- term.cmd.Wait() }()
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(term.t, err)
		return 0
	case <-time.After(20 * time.Second):
		term.t.Fatalf("the shell did not exit; it printed:\n%s", term.output())
		return -1
	}
}

func TestInteractivePrompt(t *testing.T) {
	t.Parallel()
	history := filepath.Join(t.TempDir(), "history")
	term := startTerminal(t, "FDBQUEUE_HISTORY="+history, "FDBQUEUE_DSN=memory:")
	term.expect(`\? for help`)
	term.expect(prompt)

	// A statement.
	require.Equal(t, "CREATE", term.enter("CREATE TABLE jobs (priority INT, name TEXT);"))

	// A statement over three lines: the continuation prompt until the ';'.
	term.send("INSERT INTO jobs (priority, name)\r")
	term.expect("\n      ...> ")
	term.send("VALUES (1, 'low'),\r")
	term.expect("\n      ...> ")
	require.Equal(t, "INSERT 2", term.enter("(9, 'high');"))

	// Meta-commands.
	require.Regexp(t, `jobs\s+\|\s+priority`, term.enter(`\dt`))
	require.Contains(t, term.enter(`\d jobs`), "priority queue, 2 rows")
	require.Contains(t, term.enter(`\nope`), `unknown meta-command \nope`)
	require.Contains(t, term.enter(`\?`), `\copy TABLE FROM`)

	// Ctrl-C while typing drops the unfinished statement, not the shell.
	term.send("SELECT name FROM\r")
	term.expect("\n      ...> ")
	term.send("\x03")
	term.expect(prompt)
	out := term.enter("SELECT name FROM jobs ORDER BY priority DESC LIMIT 1 FOR POP;")
	require.Contains(t, out, "high")
	require.Contains(t, out, "(1 row)")
	require.NotContains(t, out, "error")

	// The up arrow recalls the last statement, which pops the next item.
	term.send("\x1b[A")
	term.expect("FOR POP;")
	out = term.enter("")
	require.Contains(t, out, "low")

	// \q quits with status 0 and leaves the history behind.
	term.send(`\q` + "\r")
	require.Equal(t, 0, term.wait())
	b, err := os.ReadFile(history)
	require.NoError(t, err)
	require.Contains(t, string(b), "INSERT INTO jobs (priority, name) VALUES (1, 'low'), (9, 'high');\n",
		"a multi-line statement is kept as one history line")
	require.Contains(t, string(b), "\\dt\n")
	require.NotContains(t, string(b), "SELECT name FROM\n", "a cancelled statement is not history")

	// A new session starts from that history; Ctrl-D on an empty line quits.
	term = startTerminal(t, "FDBQUEUE_HISTORY="+history, "FDBQUEUE_DSN=memory:")
	term.expect(prompt)
	term.send("\x1b[A")
	term.expect(`\q`)
	term.send("\x15") // Ctrl-U clears the recalled line
	term.send("\x04")
	require.Equal(t, 0, term.wait())
}

func TestInteractiveCancel(t *testing.T) {
	t.Parallel()
	// Every commit waits a second, so statements are still running when
	// Ctrl-C arrives.
	dir := t.TempDir()
	term := startTerminal(t, "FDBQUEUE_HISTORY="+filepath.Join(dir, "h"),
		"FDBQUEUE_DSN=memory:?commit_latency=1s")
	term.expect(prompt)
	require.Contains(t, term.enter(`\timing on`), "Timing is on.")
	require.Contains(t, term.enter("CREATE TABLE q (v INT);"), "CREATE")

	// Ctrl-C cancels a running statement; the shell goes on.
	term.send("INSERT INTO q VALUES (1);\r")
	term.expect("INSERT INTO q VALUES (1);\n")
	time.Sleep(300 * time.Millisecond)
	term.send("\x03")
	out := term.expect(prompt)
	require.Contains(t, out, "statement cancelled")
	require.Contains(t, out, "Time: ")
	require.Contains(t, term.enter("SELECT COUNT(*) FROM q;"), "0\n(1 row)", "the cancelled INSERT wrote nothing")

	// Ctrl-C stops a \copy between or inside batches (a second each); what
	// it reports loaded is what the table holds.
	var csvText strings.Builder
	csvText.WriteString("v\n")
	for i := range 3 * copyBatch {
		fmt.Fprintf(&csvText, "%d\n", i)
	}
	csvPath := filepath.Join(dir, "q.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(csvText.String()), 0o600))
	term.send(`\copy q FROM '` + csvPath + "'\r")
	term.expect(csvPath + "'\n")
	time.Sleep(1500 * time.Millisecond)
	term.send("\x03")
	out = term.expect(prompt)
	require.Contains(t, out, `\copy cancelled`)
	m := regexp.MustCompile(`COPY (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.NotEqual(t, "3000", m[1], "the copy was interrupted")
	require.Contains(t, term.enter("SELECT COUNT(*) FROM q;"), m[1]+"\n(1 row)")

	term.send(`\q` + "\r")
	require.Equal(t, 0, term.wait())
}

// TestInteractiveWait: at the prompt, FOR POP WAIT takes a row that is
// there, returns no rows once its wait is over, and Ctrl-C ends a long wait
// at once, taking nothing; the shell goes on.
func TestInteractiveWait(t *testing.T) {
	t.Parallel()
	term := startTerminal(t, "FDBQUEUE_HISTORY="+filepath.Join(t.TempDir(), "h"), "FDBQUEUE_DSN=memory:")
	term.expect(prompt)
	term.enter("CREATE TABLE q (v INT);")
	term.enter("INSERT INTO q VALUES (7);")
	require.Contains(t, term.enter("SELECT v FROM q LIMIT 1 FOR POP WAIT 300;"), "7\n(1 row)")
	require.Contains(t, term.enter("SELECT v FROM q LIMIT 1 FOR POP WAIT 0.05;"), "(0 rows)")

	term.send("SELECT v FROM q LIMIT 1 FOR POP WAIT 300;\r")
	term.expect("FOR POP WAIT 300;\n")
	time.Sleep(300 * time.Millisecond)
	term.send("\x03")
	out := term.expect(prompt)
	require.Contains(t, out, "statement cancelled")
	require.NotContains(t, out, "(0 rows)")
	term.enter("INSERT INTO q VALUES (8);")
	require.Contains(t, term.enter("SELECT COUNT(*) FROM q;"), "1\n(1 row)", "the cancelled wait took nothing")

	term.send(`\q` + "\r")
	require.Equal(t, 0, term.wait())
}

// TestInteractiveCopyProgress loads a file large enough for a progress bar,
// which goes to the terminal while the data loads.
func TestInteractiveCopyProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csvText strings.Builder
	csvText.WriteString("priority,payload\n")
	rows := 0
	for csvText.Len() < 5<<20 {
		fmt.Fprintf(&csvText, "%d,%s\n", rows%10, strings.Repeat("x", 200))
		rows++
	}
	csvPath := filepath.Join(dir, "big.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(csvText.String()), 0o600))

	term := startTerminal(t, "FDBQUEUE_HISTORY="+filepath.Join(dir, "h"), "FDBQUEUE_DSN=memory:")
	term.expect(prompt)
	term.enter("CREATE TABLE big (priority INT, payload TEXT);")
	out := term.enter(`\copy big FROM '` + csvPath + "'")
	require.Contains(t, out, "loading "+csvPath)
	require.Contains(t, out, "100%")
	require.True(t, strings.HasSuffix(out, fmt.Sprintf("\nCOPY %d", rows)), out)
	require.Contains(t, term.enter("SELECT COUNT(*) FROM big;"), fmt.Sprintf("%d\n(1 row)", rows))

	// Errors in \copy say what was wrong.
	require.Contains(t, term.enter(`\copy nope FROM '`+csvPath+"'"), `no table nope`)
	require.Contains(t, term.enter(`\copy big FROM '`+filepath.Join(dir, "missing.csv")+"'"), "no such file")
	term.send("\x04")
	require.Equal(t, 0, term.wait())
}

// TestInteractiveCopyFromStdin: at the prompt, \copy ... FROM STDIN reads
// the lines typed, up to \. (a \. inside a quoted field is data); Ctrl-C
// there loads nothing. Quitting inside a transaction says it rolled back.
func TestInteractiveCopyFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	term := startTerminal(t, "FDBQUEUE_HISTORY="+filepath.Join(dir, "h"), "FDBQUEUE_DSN=memory:")
	term.expect(prompt)
	term.enter("CREATE TABLE q (n INT, s TEXT);")
	term.send(`\copy q FROM STDIN` + "\r")
	term.expect(`end with a line \. (or Ctrl-D).`)
	for _, l := range []string{"n,s", "1,one", `2,"multi`, `\.`, `line"`} {
		term.send(l + "\r")
		term.expect(l + "\n")
	}
	require.Contains(t, term.enter(`\.`), "COPY 2")
	require.Contains(t, term.enter("SELECT s FROM q LIMIT 1 FOR POP;"), "one")
	require.Contains(t, term.enter("SELECT s FROM q;"), `multi\n\.\nline`)

	term.send(`\copy q FROM STDIN` + "\r")
	term.expect(">> ")
	term.send("n,s\r")
	term.expect("n,s\n")
	term.send("\x03")
	require.Contains(t, term.expect(prompt), `\copy cancelled: nothing was loaded`)

	term.enter("BEGIN;")
	term.enter("INSERT INTO q VALUES (3, 'uncommitted');")
	term.send("\x04")
	term.expect("the session ended inside a transaction (BEGIN without COMMIT); it was rolled back")
	require.Equal(t, 0, term.wait())
}
