//go:build unix

package crashtest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// parentEnv names, in a child's environment, the descriptor of the pipe
// from its parent that the child watches.
const parentEnv = "FDBQUEUE_CRASHTEST_PARENT_FD"

// startGuarded starts cmd with the guards g, and returns what to call once
// it was waited for.
func startGuarded(cmd *exec.Cmd, g guard) (done func(), err error) {
	var w *os.File
	if g&guardPipe != 0 {
		// The child reads the pipe's end, which nothing writes: the read
		// ends when every copy of the other end is closed, this
		// process's last, when it exits, however it exits.
		var r *os.File
		if r, w, err = os.Pipe(); err != nil {
			return nil, err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, r)
		cmd.Env = append(cmd.Env, parentEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
		defer r.Close()
	}
	release, err := startOS(cmd, g)
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, err
	}
	return func() {
		release()
		if w != nil {
			w.Close()
		}
	}, nil
}

// The child's side of guardPipe: exit once the parent's pipe ends. A child
// of a child is given a pipe of its own (the variable is dropped here).
func init() {
	v := os.Getenv(parentEnv)
	if v == "" {
		return
	}
	os.Unsetenv(parentEnv)
	fd, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashtest: %s=%q: want a descriptor number\n", parentEnv, v)
		os.Exit(2)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "crashtest parent")
	go func() {
		var b [1]byte
		for {
			if _, err := f.Read(b[:]); err != nil {
				break
			}
		}
		fmt.Fprintln(os.Stderr, "crashtest: the test process that started this child exited; the child exits too")
		os.Exit(2)
	}()
}
