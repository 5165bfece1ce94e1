package crashtest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// guards are the guards Start uses.
const guards = guardPipe | guardPdeathsig

// startOS starts cmd; with guardPdeathsig the kernel kills it (SIGKILL)
// when its parent dies. Precisely when the thread that started it ends,
// which Go may do before the process ends (go.dev/issue/27505): a
// goroutine that ends locked to its thread takes the thread with it. So
// cmd starts on a goroutine locked to its thread until the child was
// waited for, which no other goroutine can lock and end meanwhile.
func startOS(cmd *exec.Cmd, g guard) (release func(), err error) {
	if g&guardPdeathsig == 0 {
		return func() {}, cmd.Start()
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error)
	waited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-waited
		}
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { close(waited) }), nil
}
