package shared

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNetworkFilesystemRefused(t *testing.T) {
	t.Parallel()
	err := networkFilesystem("/mnt/q", 0x6969)
	require.ErrorIs(t, err, ErrNetworkFS)
	require.ErrorContains(t, err, "/mnt/q is on NFS")
	require.NoError(t, networkFilesystem("/var/q", 0xef53)) // ext4
	require.NoError(t, checkFilesystem(t.TempDir()))
}
