package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fdbqueue runs the command in-process and returns its stdout, stderr and
// exit status.
func fdbqueue(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestDispatch: bench goes to the bench, ui to the dashboard, anything
// else to the shell.
func TestDispatch(t *testing.T) {
	t.Parallel()
	_, errs, code := fdbqueue(t, "ui", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, errs, "usage: fdbqueue ui DSN")
	_, errs, code = fdbqueue(t, "ui", "memory:", "--listen", "0.0.0.0:8080")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "fdbqueue ui: --listen 0.0.0.0:8080 is not a loopback address")
	_, errs, code = fdbqueue(t, "bench", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, errs, "usage: fdbqueue bench [flags] DSN")
	_, errs, code = fdbqueue(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, errs, "usage: fdbqueue [flags] [DSN]")
	out, errs, code := fdbqueue(t, "--format", "csv", "-c", "CREATE TABLE q (v TEXT); INSERT INTO q VALUES ('x')", "-c", "SELECT v FROM q")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "v\nx\n", out)
	_, errs, code = fdbqueue(t, "bench", "--nope", "memory:")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "fdbqueue: bench: flag provided but not defined: -nope")
}

// TestQuickstart runs the README's first command. Not parallel: like the
// README, it runs from the repository root, where the script's \copy finds
// its file.
func TestQuickstart(t *testing.T) {
	t.Chdir("../..")
	out, errs, code := fdbqueue(t, "-f", "examples/quickstart.sql")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "transcode video")
	require.Contains(t, errs, "COPY 5\n")
	require.Contains(t, out, "compile release")
	require.NotContains(t, errs, "fdbqueue:")
}
