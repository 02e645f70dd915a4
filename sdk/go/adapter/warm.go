package adapter

// The warm pool (docs/PROTOCOL.md §10): `CMD warm-pool` starts a process
// that says it is warm, waits for the ONE operation the driver sends it,
// makes itself what an exec'd child would be (descriptors 0, 1 and 2, the
// environment, the working folder, the arguments), stops itself with
// SIGSTOP for the driver's check, and runs the operation once continued.
// A Go runtime cannot fork (its threads are not copied), so this, not a
// fork server, is how Go saves the start; threads are fine here. It is for
// a store with a slow start (a Preloader): Preload runs before the process
// says it is warm, and nothing of the store is opened before the request,
// so that the process starts as fresh as an exec'd one.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
)

// warmRequest is the driver's one request (§9's fields).
type warmRequest struct {
	Kind   string            `json:"kind"`
	Argv   []string          `json:"argv"`
	Env    map[string]string `json:"env"`
	Cwd    string            `json:"cwd"`
	Stdout *string           `json:"stdout"`
	Stderr *string           `json:"stderr"`
}

// warm serves one request and returns the operation's exit code.
func warm(name string, newStore func() Store) int {
	if err := preload(newStore()); err != nil {
		fmt.Fprintf(os.Stderr, "%s: warm-pool: %s\n", name, oneLine(err.Error()))
		return exitCode(err)
	}
	fmt.Fprintf(os.Stdout, "{\"kind\":\"warm\",\"protocol\":%d,\"pid\":%d}\n", Protocol, os.Getpid())
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if len(line) == 0 && err == io.EOF {
		return ExitOK // stdin ended with no request: the pool did not need us
	}
	var req warmRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Kind != "run" || len(req.Argv) == 0 {
		fmt.Fprintf(os.Stderr, "%s: warm-pool: not a run request: %q\n", name, line)
		return ExitUsage
	}
	if err := becomeExeced(req); err != nil {
		fmt.Fprintf(os.Stderr, "%s: warm-pool: %v\n", name, err)
		return ExitFailed
	}
	if err := stopSelf(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: warm-pool: stopping: %v\n", name, err)
		return ExitFailed
	}
	return Main(name, newStore, req.Argv, os.Stdout, os.Stderr)
}

// stopSelf stops the process for the driver's check of its descriptors;
// the driver continues it (or seizes every thread with ptrace and resumes
// them). The SIGSTOP goes to this very thread (tgkill, the goroutine
// locked to it): a kill(2) to the process may be taken by another thread,
// and this one would run on into the operation, opening the store, until
// the group stop caught up with it.
func stopSelf() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// becomeExeced: /dev/null on 0, the request's files on 1 and 2 (the control
// pipes closed by being replaced), its environment, its folder.
func becomeExeced(req warmRequest) error {
	files := []*string{nil, req.Stdout, req.Stderr}
	for fd, path := range files {
		if err := reopen(fd, path); err != nil {
			return err
		}
	}
	for k, v := range req.Env {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	if req.Cwd != "" {
		return os.Chdir(req.Cwd)
	}
	return nil
}

// reopen puts path (or /dev/null) on descriptor fd: 0 read-only, 1 and 2
// with O_WRONLY | O_CREAT | O_TRUNC, mode 0644.
func reopen(fd int, path *string) error {
	name, flags := os.DevNull, syscall.O_RDONLY
	if fd > 0 {
		flags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_TRUNC
	}
	if path != nil {
		name = *path
	}
	opened, err := syscall.Open(name, flags|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s for descriptor %d: %w", name, fd, err)
	}
	defer syscall.Close(opened)
	// Dup3 clears O_CLOEXEC on the copy, as an exec'd child's 0, 1, 2 have it.
	if err := syscall.Dup3(opened, fd, 0); err != nil {
		return fmt.Errorf("descriptor %d: %w", fd, err)
	}
	return nil
}
