# SPDX-License-Identifier: GPL-2.0-only
"""HTTP on 127.0.0.1 for the agent's tests: a Pyroscope stand-in that records every push
(Python's http.server, sharing no code with the agent), the multipart body of a push
read back by Python's email package, a free port, and a plain GET for the metrics
endpoint."""

import http.server
import socket
import threading
from email.parser import BytesParser
from email.policy import HTTP


# A Pyroscope stand-in: records every request, answers 200

class Ingest(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port=0):
        self.requests = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", port), IngestHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self):
        self.shutdown()
        self.server_close()


class IngestHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.requests.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def multipart_fields(headers, body):
    """{field name: (filename, bytes)} of a multipart/form-data body, read by Python's
    email package, which shares nothing with curl."""
    msg = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + headers["Content-Type"].encode() + b"\r\n\r\n" + body)
    assert msg.is_multipart(), headers["Content-Type"]
    return {part.get_param("name", header="content-disposition"):
            (part.get_filename(), part.get_payload(decode=True))
            for part in msg.iter_parts()}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The metrics endpoint, scraped by a plain client

def http_get(port, path, timeout=10):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert int(headers["Content-Length"]) == len(body)
    return status, headers, body.decode()
