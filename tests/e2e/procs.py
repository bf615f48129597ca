"""Processes the harness starts: one log file each, stopped by process id.

Every child gets PR_SET_PDEATHSIG(SIGKILL), so that if the runner itself is
killed (CTest's timeout sends SIGKILL), no etcd or apiserver outlives it."""
import ctypes
import os
import signal
import socket
import subprocess
import time

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    """A loopback port nobody listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(no log: {e})"
    return "\n".join(text.splitlines()[-lines:])


class ProcessExited(RuntimeError):
    pass


class Supervisor:
    """Starts named processes and stops them again, also on failure."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = {}  # name -> Popen, in start order

    def log_path(self, name):
        return os.path.join(self.log_dir, f"{name}.log")

    def start(self, name, argv, env=None):
        if name in self.procs and self.procs[name].poll() is None:
            raise RuntimeError(f"{name} is already running")
        # Appended, so a restarted component keeps its earlier life in the same log.
        log = open(self.log_path(name), "ab")
        log.write(f"=== e2e: starting {' '.join(argv)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=env,
                                    preexec_fn=_die_with_parent)
        finally:
            log.close()
        self.procs.pop(name, None)
        self.procs[name] = proc
        return proc

    def running(self, name):
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def require_running(self, name):
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            code = None if proc is None else proc.returncode
            raise ProcessExited(f"{name} exited (code {code}); its log ends:\n"
                                f"{tail(self.log_path(name))}")

    def stop(self, name, sig=signal.SIGTERM, grace_s=10):
        """Signals the process by its id, then SIGKILL if it outlives the grace."""
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(sig)
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self, name):
        self.stop(name, sig=signal.SIGKILL)

    def stop_all(self):
        # The reverse of start order: the scheduler before the apiserver before etcd.
        for name in reversed(list(self.procs)):
            self.stop(name)

    def tails(self, lines=40):
        out = []
        for name in self.procs:
            out.append(f"----- {name} ({self.log_path(name)}) -----\n"
                       f"{tail(self.log_path(name), lines)}")
        return "\n".join(out)


def wait_until(what, probe, timeout_s, interval_s=0.25):
    """Calls probe() until it returns something truthy; raises TimeoutError naming
    what was awaited and the last value (or error) seen."""
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        try:
            value = probe()
            if value:
                return value
            last = value
        except Exception as e:  # pylint: disable=broad-except
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what} (last: {last})")
        time.sleep(interval_s)
