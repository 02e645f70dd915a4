"""crashcells.forkserver: a fork server and a warm process for Python adapters
of the crashcells child protocol
(docs/PROTOCOL.md, "Fork server"), standard library only.

Starting a Python process costs more than a store's own work per operation
(a bare interpreter 0.05 s, a store's imports 0.1 s and more, against a few
milliseconds of SQLite). A child that lists "fork-server" in its ready
record's `operations` is started once as `CMD ARGS fork-server`; it does its
imports, then forks one process per operation the driver asks for. Each
forked process starts as fresh as an exec'd one (its own process group, the
parent-death signal, no descriptor but its three standard streams, the
operation's environment, folder and arguments), stops itself so that the
driver can look at it, and once continued runs `main()` exactly as the
script's own `sys.exit(main())` would.

Crash model: a forked process is killed with SIGKILL like an exec'd child.
Nothing of the server may reach it but the imports: no open database, no
file of a trial, no buffered output (the driver refuses a process that holds
one). The server itself writes nothing but its control lines.

In an adapter (main() reads sys.argv, as a script's main does; an adapter on
`crashcells.adapter` gets this from `adapter.run`):

    from crashcells import forkserver

    if __name__ == "__main__":
        if sys.argv[-1:] == ["fork-server"]:
            forkserver.serve(main, preload=import_heavy_things)
        if sys.argv[-1:] == ["warm-pool"]:
            forkserver.warm(main, preload=import_heavy_things)
        sys.exit(main())

`warm()` is the other way to pay the imports ahead (docs/PROTOCOL.md, "Warm
pool"): the process is exec'd by the driver before its operation is known,
does its imports, waits for one request and runs it, once. A fork server is
cheaper where it can be used; a warm process is what a runtime that cannot
fork uses, and this one lets the harness's tests drive the pool with a real
store.
"""

import json
import os
import sys

# select, signal and traceback are imported by serve() only: an adapter that
# imports this module and runs exec'd pays for nothing it does not use.

PROTOCOL = 2
FORK_SERVER = "fork-server"
WARM_POOL = "warm-pool"
# prctl(2)'s option that sets the parent-death signal.
PR_SET_PDEATHSIG = 1
# A forked process whose server died before it was set up: not an errno.
EXIT_ORPHANED = 255
# What an exception that escapes main() exits with (the examples' EXIT_ERROR).
EXIT_ERROR = 3
READ_SIZE = 65536


def serve(main, preload=None):
    """Serves forks of `main` on stdin/stdout until stdin ends, then exits 0.
    `preload` runs first, once: the imports every operation would do."""
    global select, signal, traceback
    import select
    import signal
    import traceback

    if preload is not None:
        preload()
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        # A fork copies only this thread; a lock another one holds would
        # stay held for ever in every forked process.
        raise RuntimeError("the fork server's preload left %d threads running" % threading.active_count())
    server = Server(main)
    server.loop()
    os._exit(0)


def warm(main, preload=None):
    """Runs as one warm process (docs/PROTOCOL.md, "Warm pool"): `preload`,
    the `warm` line, then exactly one request read from stdin, set up as an
    exec'd child is, a stop for the driver, and `main()`. Never returns."""
    global signal, traceback
    import signal
    import traceback

    base = sys.argv[:-1] if sys.argv[-1:] == [WARM_POOL] else list(sys.argv)
    if preload is not None:
        preload()
    send({"kind": "warm", "protocol": PROTOCOL, "pid": os.getpid()})
    data = b""
    while b"\n" not in data:
        chunk = os.read(0, READ_SIZE)
        if not chunk:
            # The pool closed without using this process: nothing to run.
            os._exit(0)
        data += chunk
    try:
        request = json.loads(data.split(b"\n", 1)[0])
        if request.get("kind") != "run":
            raise ValueError("unknown request kind %r" % request.get("kind"))
        close_inherited()
        onto(0, os.open(os.devnull, os.O_RDONLY))
        for fd, path in ((1, request.get("stdout")), (2, request.get("stderr"))):
            onto(fd, os.open(path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        os.environ.update(request.get("env") or {})
        os.chdir(request.get("cwd") or os.getcwd())
        sys.argv = base + list(request["argv"])
    except BaseException:
        traceback.print_exc()
        os._exit(EXIT_ERROR)
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(run(main))


class Server:
    def __init__(self, main):
        import ctypes

        self.main = main
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.pid = os.getpid()
        # The arguments before the operation: an exec'd process gets
        # CMD ARGS <op> ..., the server was started as CMD ARGS fork-server.
        self.base = sys.argv[:-1] if sys.argv[-1:] == [FORK_SERVER] else list(sys.argv)
        # SIGCHLD wakes the select() below through a pipe (the signal's own
        # handler must not write the control channel: it may interrupt a line).
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)

    def loop(self):
        send({"kind": FORK_SERVER, "protocol": PROTOCOL, "pid": self.pid})
        pending = b""
        while True:
            readable, _, _ = select.select([0, self.wake_r], [], [])
            if self.wake_r in readable:
                drain(self.wake_r)
                self.reap()
            if 0 in readable:
                data = os.read(0, READ_SIZE)
                if not data:
                    return
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if line.strip():
                        self.handle(line)

    def reap(self):
        """Reports every forked process that ended (a traced one only after
        its tracer has seen its end)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if os.WIFSIGNALED(status):
                send({"kind": "exit", "pid": pid, "signal": os.WTERMSIG(status)})
            elif os.WIFEXITED(status):
                send({"kind": "exit", "pid": pid, "code": os.WEXITSTATUS(status)})

    def handle(self, line):
        try:
            request = json.loads(line)
            rid = request["id"]
        except (ValueError, KeyError, TypeError) as e:
            send({"kind": "refused", "id": None, "error": "unreadable request: %s" % e})
            return
        if request.get("kind") != "run":
            send({"kind": "refused", "id": rid, "error": "unknown request kind %r" % request.get("kind")})
            return
        # Nothing buffered may be written twice, by the server and the fork.
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as e:
            send({"kind": "refused", "id": rid, "error": "fork: %s" % e})
            return
        if pid == 0:
            self.become(request)
        send({"kind": "forked", "id": rid, "pid": pid})

    def become(self, request):
        """The forked process: set up as an exec'd child is, stop for the
        driver, then run the operation. Never returns."""
        try:
            self.set_up(request)
        except BaseException:
            # Before its streams are its own: the server's stderr.
            traceback.print_exc()
            os._exit(EXIT_ERROR)
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(run(self.main))

    def set_up(self, request):
        os.setpgid(0, 0)
        # The server is the parent: if it dies, so does this process.
        if self.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes_errno(), "prctl(PR_SET_PDEATHSIG)")
        # A server that died before the prctl sent no death signal.
        if os.getppid() != self.pid:
            os._exit(EXIT_ORPHANED)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        close_inherited()
        onto(0, os.open(os.devnull, os.O_RDONLY))
        for fd, path in ((1, request.get("stdout")), (2, request.get("stderr"))):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            onto(fd, os.open(path or os.devnull, flags, 0o644))
        os.environ.update(request.get("env") or {})
        os.chdir(request.get("cwd") or os.getcwd())
        sys.argv = self.base + list(request["argv"])


def close_inherited():
    """Every descriptor but 0-2 goes: the control pipes, the wakeup pipe,
    anything the imports left open (a forked process that kept one is
    refused by the driver)."""
    os.closerange(3, max_fd())


def run(main):
    """main(), as `sys.exit(main())` runs it: its exit code."""
    try:
        code = main()
    except SystemExit as e:
        code = e.code
    except BaseException:
        traceback.print_exc()
        code = EXIT_ERROR
    if code is None:
        code = 0
    elif not isinstance(code, int):
        # sys.exit("message") prints the message and exits 1.
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code & 0xFF


def send(obj):
    """One control line on stdout with os.write: no buffer of the server's
    can reach a fork."""
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def drain(fd):
    try:
        while os.read(fd, READ_SIZE):
            pass
    except BlockingIOError:
        pass


def onto(fd, opened):
    if opened != fd:
        os.dup2(opened, fd)
        os.close(opened)


def max_fd():
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 65536


def ctypes_errno():
    import ctypes

    return ctypes.get_errno()
