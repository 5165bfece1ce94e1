package shared

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fdbqueue/fdbqueue/internal/crashtest"
)

// serveInChild starts a process that serves the database in dir, and
// returns once it does; the test kills it when it ends.
func serveInChild(t *testing.T, dir string, env ...string) *crashtest.Child {
	c := crashtest.Start(t, "TestServeChild", append(env, "FDBQUEUE_SHARED_DIR="+dir)...)
	t.Cleanup(func() {
		c.Kill(t)
		for range c.Lines {
		}
		_ = c.Wait()
	})
	l, ok := <-c.Lines
	require.True(t, ok, "the child exited")
	require.Equal(t, "ready", l)
	go func() {
		for range c.Lines {
		}
	}()
	return c
}

// ServeInChild is serveInChild, for the package's external tests.
var ServeInChild = serveInChild
