"""short_threads: a thread-per-request server (the standard library's
ThreadingHTTPServer: a new thread for each connection, one request per connection)
loaded by two client threads of its own, each opening a connection per request. A
request's work is 0.2 to 3 ms of CPU, shorter than a period at 100 Hz and about one
at 1 kHz, so the handler threads live for less than a period or two of CPU.

Truth: truth["cpu"]["handlers"] is the CPU time of handle_work() in the request
threads, truth["cpu"]["clients"] that of client_request() in the client threads, each
timed by the thread itself with time.thread_time(); truth["process_cpu"] the process's
CPU at the same moment; truth["requests"] the requests served."""

import http.client
import http.server
import random
import sys
import threading
import time

from pbp_common import CpuBuckets, Truth, parse_args

T = None
CPU = None
SERVED = [0]


def handle_work(n):
    """The request's work, in its own thread (bucket 'handlers')."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        n = int(self.path.rsplit("=", 1)[1])
        t0 = time.thread_time()
        body = str(handle_work(n)).encode()
        CPU.add("handlers", time.thread_time() - t0)
        SERVED[0] += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def client_request(port, n):
    """One request on a connection of its own (bucket 'clients')."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/work?n=%d" % n)
        return conn.getresponse().read()
    finally:
        conn.close()


def client(port, stop, seed):
    rng = random.Random(seed)
    while time.monotonic() < stop:
        n = rng.randint(4000, 60000)
        t0 = time.thread_time()
        try:
            client_request(port, n)
        except OSError:
            time.sleep(0.01)
        CPU.add("clients", time.thread_time() - t0)


def main():
    global T, CPU
    args = parse_args()
    T = Truth(args.truth)
    CPU = CpuBuckets(T, ["handlers", "clients"])
    T["bucket_functions"] = {"handlers": ["handle_work"], "clients": ["client_request"]}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="acceptor", daemon=True).start()
    port = server.server_address[1]
    stop = time.monotonic() + args.seconds
    for i in range(2):
        threading.Thread(target=client, args=(port, stop, i), name="client-%d" % i,
                         daemon=True).start()
    while SERVED[0] < 20 and time.monotonic() < stop:
        time.sleep(0.01)
    T["port"] = port
    while time.monotonic() < stop:
        T["requests"] = SERVED[0]
        CPU.publish()
        time.sleep(0.1)
    server.shutdown()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
