//go:build !windows

package shell

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClosedPipeKeepsPoppedRows runs the shell with its standard output a
// pipe nobody reads (as in fdbqueue ... | head -0): the FOR POP's result
// cannot be written, and the shell says so and shows the rows it removed
// on standard error, instead of dying of SIGPIPE with the rows gone.
func TestClosedPipeKeepsPoppedRows(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FDBQUEUE_SHELL_MAIN=1", "FDBQUEUE_DSN=memory:")
	cmd.Stdin = strings.NewReader("CREATE TABLE q (v TEXT);\nINSERT INTO q VALUES ('precious');\nSELECT v FROM q LIMIT 1 FOR POP;\n")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	defer w.Close()
	cmd.Stdout = w
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode(), "a failed write is an error, not a death by SIGPIPE; stderr:\n%s", errb.String())
	require.Contains(t, errb.String(), "broken pipe")
	require.Contains(t, errb.String(), "the rows FOR POP removed are:\nv\n--------\nprecious\n(1 row)")
}
