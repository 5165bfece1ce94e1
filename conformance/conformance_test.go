package conformance_test

import (
	"testing"

	"github.com/fdbqueue/fdbqueue/conformance"
)

func TestMemory(t *testing.T) {
	conformance.Run(t, "memory:")
}

func TestFile(t *testing.T) {
	conformance.Run(t, "file:"+t.TempDir())
}
