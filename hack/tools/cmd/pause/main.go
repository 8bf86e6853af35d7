// The pause program of the local stack's sandbox image: it holds the pod's
// namespaces open until the runtime stops it, and as PID 1 of a shared PID
// namespace it reaps the zombies other containers leave behind.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reapChildren()
	}
}

// reapChildren collects every exited child; one SIGCHLD may stand for many.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
