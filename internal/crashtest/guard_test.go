//go:build unix

package crashtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChildExitsWithParent: a test process (here a child of the test,
// the middle) that dies, as on a test timeout, leaves no child of its
// own running: each guard alone ends it.
func TestChildExitsWithParent(t *testing.T) {
	switch {
	case os.Getenv("FDBQUEUE_CRASHTEST_LEAF") != "":
		fmt.Println("leaf")
		time.Sleep(time.Hour) // until its parent's end ends it
		return
	case os.Getenv("FDBQUEUE_CRASHTEST_MIDDLE") != "":
		g, err := strconv.Atoi(os.Getenv("FDBQUEUE_CRASHTEST_MIDDLE"))
		require.NoError(t, err)
		leaf := start(t, guard(g), "TestChildExitsWithParent", "FDBQUEUE_CRASHTEST_LEAF=1")
		require.Equal(t, "leaf", <-leaf.Lines)
		fmt.Println("leaf", leaf.cmd.Process.Pid)
		time.Sleep(time.Hour) // until the test kills it
		return
	}
	t.Parallel()
	cases := []struct {
		name string
		g    guard
	}{{"pipe", guardPipe}}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct {
			name string
			g    guard
		}{"pdeathsig", guardPdeathsig})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The leaf writes to the middle's standard error, this pipe:
			// it ends once both exited.
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer r.Close()
			middle := exec.Command(os.Args[0], "-test.run=^TestChildExitsWithParent$")
			middle.Env = append(os.Environ(), "FDBQUEUE_CRASHTEST_MIDDLE="+strconv.Itoa(int(c.g)))
			middle.Stderr = w
			out, err := middle.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, middle.Start())
			w.Close()
			sc := bufio.NewScanner(out)
			leaf := 0
			for leaf == 0 && sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "leaf" {
					leaf, err = strconv.Atoi(f[1])
					require.NoError(t, err)
				}
			}
			require.NotZero(t, leaf, "the middle process started no leaf")
			require.NoError(t, middle.Process.Kill())
			_ = middle.Wait()

			// A bound on a wait that ends at once when the guard works,
			// and never when it does not.
			require.NoError(t, r.SetReadDeadline(time.Now().Add(time.Minute)))
			_, err = io.Copy(io.Discard, r)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				_ = syscall.Kill(leaf, syscall.SIGKILL)
			}
			require.NoError(t, err, "the leaf outlived its parent")
		})
	}
}
