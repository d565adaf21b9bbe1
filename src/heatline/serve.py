"""``--pprof-server HOST:PORT``: the running profile pulled over HTTP on the paths and with the
semantics of Go's net/http/pprof, so ``go tool pprof http://HOST:PORT/debug/pprof/profile`` and
continuous-profiling scrapers read a Python service as they read a Go one.

- ``/debug/pprof/profile?seconds=N`` (default 30, as Go): the CPU profile of the next N
  seconds, the difference of the session's profile at the start and at the end of the window
  (data/window.py); its default sample type ``cpu`` is the time on a CPU (Python + native), the
  blocked ``system`` time a type of its own (renderers/pprof.py, what="cpu").
- ``/debug/pprof/heap``: the memory held now per allocating line (``inuse_space``, the
  default) and the memory allocated there since the start (``alloc_space``), from the same
  sampled allocations as the profile's memory; 404 under --cpu-only.
- ``/debug/otlp/profile?seconds=N``: the same kind of window's CPU profile as an OTLP profiles
  request (renderers/otlp.py, what="cpu"; Content-Type application/x-protobuf, not gzipped),
  the body a forwarder POSTs as it is to a Collector's ``/v1development/profiles``.
- ``/debug/pprof/``: a plain-text index of the three.
The two pprof ones are gzipped profile.proto (Content-Type application/octet-stream), as Go
serves them.

The program must not notice the server: it runs on threads started with ``_thread`` (not
``threading``), so ``threading.enumerate()``, ``active_count()`` and the shutdown's join never
see them, and they die with the interpreter like daemon threads; the listening socket is
close-on-exec. What remains visible: the socket's descriptor in the program's table (os.listdir
of /proc/self/fd) and the threads in ``sys._current_frames()`` and /proc/self/task. What a
request runs is imported with this module, before the program starts (linecache aside, which
building a profile imports when the program has not). A bad request gets a 4xx answer and the
connection closed; nothing a client sends can raise into the program.
"""

from __future__ import annotations

import _thread
import gzip
import os
import socket
import time
from typing import Any, Callable

# What a request runs, imported with this module, which run/launch.py imports with heatline's
# own sys.path before the program starts: run/isolation.py then sets the stdlib modules heatline
# imported aside for the program's own, and a request must import nothing from the program's
# sys.path (its own gzip.py).
from heatline.data import build as _build  # noqa: F401 -- session.profile()'s, imported now
from heatline.data.window import between
from heatline.engine.switching import quick as quick_switching
from heatline.renderers import otlp
from heatline.renderers.pprof import encode

DEFAULT_SECONDS = 30.0  # Go's default for /debug/pprof/profile
MAX_SECONDS = 3600.0
MAX_HANDLERS = 8  # requests served at once; more get 503
MAX_REQUEST_BYTES = 16384
READ_TIMEOUT_S = 10.0


class ServerError(Exception):
    """str() is one line (the address could not be had)."""


class PprofServer:
    """Serves profile() (the session's profile so far, a callable) on host:port. Raises
    ServerError when the address cannot be bound (in use, not an address of this machine)."""

    def __init__(self, host: str, port: int, profile: Callable[[], dict[str, Any]]) -> None:
        self._profile = profile
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:
            raise ServerError(f"--pprof-server {host}:{port}: {exc.strerror or exc}") from None
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(16)
        except OSError as exc:
            listener.close()
            why = "the port is in use" if exc.errno == 98 else (exc.strerror or str(exc))
            raise ServerError(f"--pprof-server {host}:{port}: {why}") from None
        except (OverflowError, socket.gaierror, UnicodeError) as exc:
            listener.close()
            raise ServerError(f"--pprof-server {host}:{port}: {exc}") from None
        self._listener = listener
        self._fd = listener.fileno()
        status = os.fstat(self._fd)
        self._identity = (status.st_dev, status.st_ino)  # the socket's, whatever its number
        self.host, self.port = listener.getsockname()[:2]
        self._handlers = _thread.allocate_lock()
        self._busy = 0
        self._closed = False
        # The kernel ids of the server's threads (the accept loop's, each request's): heatline's,
        # not the program's (heatline attach leaves them out of the profile and waits for them).
        self.native_ids: set[int] = set()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/debug/pprof/"

    def start(self) -> None:
        _thread.start_new_thread(self._accept_loop, ())

    def close(self) -> None:
        """Stops accepting (requests being served finish or die with the process); the accept
        loop's thread ends.

        Called on a thread whose descriptor table is not the program's (heatline attach's
        stopping thread, which the engine's sampler starts in its own table: sampler.c), the
        socket's number is not the socket there: nothing is done with it (a shutdown or close
        would act on the sampler's own file of that number). The accept loop is woken with a
        connection instead, and closes the socket itself, on its own thread, in the
        program's table."""
        if self._closed:
            return
        self._closed = True
        if self._in_own_table():
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            return
        host = self.host
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        try:
            socket.create_connection((host, self.port), timeout=READ_TIMEOUT_S).close()
        except OSError:
            pass  # the loop then sees _closed at its next connection

    def _in_own_table(self) -> bool:
        """Whether this thread's descriptor table holds the socket under its number."""
        try:
            status = os.fstat(self._fd)
        except OSError:
            return False
        return (status.st_dev, status.st_ino) == self._identity

    def forget(self) -> None:
        """In a forked child: this process's copy of the socket closed, the parent's left
        listening (no shutdown, which would end it for both)."""
        if not self._closed:
            self._closed = True
            try:
                self._listener.detach()
                os.close(self._fd)
            except OSError:
                pass

    def _accept_loop(self) -> None:
        self.native_ids.add(_thread.get_native_id())
        while not self._closed:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                if self._closed:
                    break
                time.sleep(0.05)  # ECONNABORTED, EMFILE...: the next one may work, not at once
                continue
            if self._closed:  # woken by close() from another descriptor table: closed here
                connection.close()
                self._listener.close()
                break
            with self._handlers:
                full = self._busy >= MAX_HANDLERS
                if not full:
                    self._busy += 1
            if full:
                _answer(connection, 503, b"too many requests at once\n")
                continue
            try:
                _thread.start_new_thread(self._handle, (connection,))
            except RuntimeError:
                with self._handlers:
                    self._busy -= 1
                _answer(connection, 503, b"cannot start a thread\n")

    def _handle(self, connection: socket.socket) -> None:
        self.native_ids.add(_thread.get_native_id())
        try:
            status, body, kind = self._respond(connection)
            _answer(connection, status, body, kind)
        except Exception:  # noqa: BLE001 -- nothing a client does may reach the program
            _answer(connection, 500, b"heatline could not build the profile\n")
        finally:
            with self._handlers:
                self._busy -= 1

    def _respond(self, connection: socket.socket) -> tuple[int, bytes, str]:
        # The GIL is taken back after each system call of a request's work: with the quick
        # switch interval (engine/switching.py), not during a CPU window's wait.
        with quick_switching():
            request = _read_request(connection)
        if request is None:
            return 400, b"bad request\n", "text/plain"
        method, path, query = request
        if path in _WINDOWS and method == "GET":
            return self._answer(method, path, query)  # its window is the program's
        with quick_switching():
            return self._answer(method, path, query)

    def _answer(self, method: str, path: str, query: dict[str, str]) -> tuple[int, bytes, str]:
        if method != "GET":
            return 405, b"only GET\n", "text/plain"
        if path in ("/debug/pprof", "/debug/pprof/"):
            return 200, _INDEX, "text/plain; charset=utf-8"
        if path in _WINDOWS:
            seconds_text = query.get("seconds", "")
            try:
                seconds = float(seconds_text) if seconds_text else DEFAULT_SECONDS
            except ValueError:
                seconds = -1.0
            if not 0 < seconds <= MAX_SECONDS:
                return 400, (f"seconds must be a number greater than 0 and at most "
                             f"{MAX_SECONDS:g}\n").encode(), "text/plain"
            if path == "/debug/otlp/profile":
                return 200, self._cpu(seconds, as_otlp=True), otlp.CONTENT_TYPE
            return 200, self._cpu(seconds), "application/octet-stream"
        if path == "/debug/pprof/heap":
            profile = self._profile()
            if not (profile.get("memory") or {}).get("enabled"):
                return 404, b"memory profiling is off (--cpu-only)\n", "text/plain"
            return 200, _gzip(encode(profile, what="heap")), "application/octet-stream"
        return 404, (b"unknown profile: /debug/pprof/profile, /debug/pprof/heap and "
                     b"/debug/otlp/profile are served\n"), "text/plain"

    def _cpu(self, seconds: float, as_otlp: bool = False) -> bytes:
        with quick_switching():
            before = self._profile()
        time.sleep(seconds)
        with quick_switching():
            window = between(before, self._profile())
            if as_otlp:
                return otlp.encode(window, what="cpu")
            return _gzip(encode(window, what="cpu"))


_WINDOWS = ("/debug/pprof/profile", "/debug/otlp/profile")  # a CPU profile of a window


_INDEX = (b"heatline's profiles (go tool pprof http://HOST:PORT/debug/pprof/NAME):\n"
          b"profile?seconds=N  CPU time of the next N seconds (default 30)\n"
          b"heap               memory held now, per allocating line\n"
          b"\nand at /debug/otlp/profile?seconds=N the CPU time of the next N seconds as an OTLP\n"
          b"profiles request (application/x-protobuf), for an OpenTelemetry Collector\n")


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _read_request(connection: socket.socket) -> tuple[str, str, dict[str, str]] | None:
    """(method, path, query) of an HTTP/1.x request, or None when it is not one."""
    connection.settimeout(READ_TIMEOUT_S)
    data = b""
    while b"\r\n\r\n" not in data and b"\n\n" not in data:
        chunk = connection.recv(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            return None
    parts = data.split(b"\n", 1)[0].strip().split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    try:
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None
    path, _, query_text = target.partition("?")
    query = {}
    for pair in query_text.split("&"):
        name, _, value = pair.partition("=")
        if name:
            query[name] = value
    return method, path, query


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _answer(connection: socket.socket, status: int, body: bytes,
            kind: str = "text/plain") -> None:
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            "X-Content-Type-Options: nosniff\r\nConnection: close\r\n")
    if kind == "application/octet-stream":
        head += 'Content-Disposition: attachment; filename="profile"\r\n'
    try:
        connection.settimeout(READ_TIMEOUT_S)
        connection.sendall(head.encode("ascii") + b"\r\n" + body)
    except OSError:
        pass  # the client went away
    finally:
        try:
            connection.close()
        except OSError:
            pass
