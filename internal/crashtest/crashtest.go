// Package crashtest runs the test binary again as a child process for crash
// tests: the test reads what the child prints, a line at a time, and kills
// it (SIGKILL) at the moment it chooses. Tests only.
//
// A child does not outlive the test process that started it (killed on a
// test timeout, say), where it would go on holding its database's lock:
// on Unix it watches a pipe from its parent and exits when the pipe ends,
// and on Linux the kernel also kills it (Pdeathsig), even if it is too
// stuck to read. (Windows: no such guard yet.)
package crashtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fdbqueue/fdbqueue/kv"
)

// Rounds returns how many children a crash test runs: FDBQUEUE_CRASH_ROUNDS,
// or def when that is unset.
func Rounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("FDBQUEUE_CRASH_ROUNDS")); err == nil {
		return n
	}
	return def
}

// hangAfter is how long Read waits for a child that neither exits nor is
// killed: then it kills it and fails the test.
const hangAfter = 2 * time.Minute

// Child is a child process running one test of this binary.
type Child struct {
	cmd    *exec.Cmd
	test   string
	done   func()           // after Wait: lets go of what kept the child alive
	killAt <-chan time.Time // armed by KillAfter
	// Lines carries what the child prints on its standard output, a line
	// at a time; it is closed once the child's output ends.
	Lines <-chan string
	// Killed says Kill was called.
	Killed bool
}

// Start runs the test named test (matched exactly) of this binary with env
// added to this process's environment; its standard error goes to this
// process's.
func Start(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	return start(t, guards, test, env...)
}

// guard is a way a child ends when its parent does.
type guard int

const (
	guardPipe      guard = 1 << iota // the child exits when a pipe from its parent ends (Unix)
	guardPdeathsig                   // the kernel kills the child (Linux)
)

// start is Start, with the guards g.
func start(t testing.TB, g guard, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	done, err := startGuarded(cmd, g)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return &Child{cmd: cmd, test: test, done: done, Lines: lines}
}

// Kill kills the child with SIGKILL, as a crash would; a second call does
// nothing.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if c.Killed {
		return
	}
	// A child that has exited already (it failed, and said so) is left
	// to Wait.
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	c.Killed = true
}

// KillAfter has Read kill the child d from now. A kill already armed, or
// done, stays as it is.
func (c *Child) KillAfter(d time.Duration) {
	if c.killAt == nil && !c.Killed {
		c.killAt = time.After(d)
	}
}

// Read hands each non-empty line the child prints to line, which may call
// Kill or KillAfter, until the child's output ends; it kills the child when
// KillAfter says.
func (c *Child) Read(t testing.TB, line func(l string)) {
	t.Helper()
	hang := time.After(hangAfter)
	for {
		select {
		case l, ok := <-c.Lines:
			if !ok {
				return
			}
			if l != "" {
				line(l)
			}
		case <-c.killAt:
			c.killAt = nil
			c.Kill(t)
		case <-hang:
			hang = nil
			c.Kill(t)
			t.Errorf("crashtest: the child running %s hung", c.test)
		}
	}
}

// ReadAcks reads a child that prints "ready" once it is under way, "ack
// N" after each commit it made durable (1, 2, ... on from acked), and
// "error ..." when it fails: it kills the child killAfter after "ready",
// fails the test on an error or an ack out of order, and returns the last
// commit acknowledged.
func (c *Child) ReadAcks(t testing.TB, acked uint64, killAfter time.Duration) uint64 {
	t.Helper()
	c.Read(t, func(l string) {
		f := append(strings.Fields(l), "") // f[0] is there for a blank line
		switch f[0] {
		case "ready":
			c.KillAfter(killAfter)
		case "ack":
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil || n != acked+1 {
				t.Fatalf("crashtest: the child acknowledged %q after commit %d: acks go 1, 2, ... in order", l, acked)
			}
			acked = n
		case "error":
			t.Fatalf("crashtest: the child failed: %s", l)
		}
	})
	return acked
}

// Last reads the key "last", where a child that prints "ack N" keeps the
// last commit it made (a little-endian uint64; 0 for none).
func Last(db kv.Database) (uint64, error) {
	var last uint64
	err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("last"))
		if len(v) == 8 {
			last = binary.LittleEndian.Uint64(v)
		}
		return err
	})
	return last, err
}

// Wait waits for the child to exit, once Lines is closed, and returns how it
// ended (an error when it was killed or failed).
func (c *Child) Wait() error {
	err := c.cmd.Wait()
	c.done()
	return err
}
