"""A publisher's server on the loopback, for `embedprobe data download`: files served from
memory at their URL paths (GET and HEAD, Range requests answered 206 or 416), every request
recorded, and a path that can cut its first response after N bytes."""

from __future__ import annotations

import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Mirror:
    """Start with `with Mirror() as mirror:`; `mirror.url` is http://127.0.0.1:PORT."""

    def __init__(self, port: int = 0):
        self.port = port  # 0: any free port
        self.routes: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_after: dict[str, int] = {}  # path -> bytes its next GET sends before the cut
        self.ignore_range = False  # answer every GET whole (200), as some servers do

    def serve(self, path: str, data: bytes) -> None:
        self.routes["/" + path.lstrip("/")] = data

    def gets(self, path: str) -> list[str | None]:
        """The Range headers of the GETs of one path, in order (None: no Range)."""
        return [r for m, p, r in self.requests if m == "GET" and p == "/" + path.lstrip("/")]

    def __enter__(self) -> Mirror:
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                self.answer(body=False)

            def do_GET(self):
                self.answer(body=True)

            def answer(self, body: bool) -> None:
                wanted = self.headers.get("Range")
                mirror.requests.append((self.command, self.path, wanted))
                data = mirror.routes.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                if wanted and body and not mirror.ignore_range:
                    start = int(wanted.removeprefix("bytes=").split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if not body:
                    return
                cut = mirror.cut_after.pop(self.path, None) if self.command == "GET" else None
                if cut is None:
                    self.wfile.write(data[start:])
                    return
                self.wfile.write(data[start:start + cut])  # then the connection drops
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def sha256sums(files: dict[str, bytes]) -> bytes:
    """A PhysioNet SHA256SUMS.txt of the files: `<sha256> <path>` lines."""
    return "".join(f"{hashlib.sha256(data).hexdigest()} {name}\n"
                   for name, data in files.items()).encode()
