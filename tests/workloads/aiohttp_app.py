"""aiohttp_app: an aiohttp web service under load. A middleware, then handlers that do
real work: a report page that awaits its rows from a data layer of coroutines (JSON
decoded), summarises them and renders a Jinja2 template (loops, filters, a macro, an
include), and a JSON endpoint that hands a prime sieve to a thread pool, waits for it
while the loop serves other requests, and sums up what comes back. A client process
(this script with --client) keeps many aiohttp requests in flight at once.

Truth: each handler times its own CPU (time.thread_time() around the parts of its
body between which it never waits, so no other task's CPU is counted) into
truth["cpu"]["handlers"], the sieve its own into truth["cpu"]["executor"];
truth["process_cpu"] is the server process's CPU at the same moment.
truth["chains"][NAME] holds each distinct stack a handler, the data layer's innermost
coroutine and the sieve were called with, as each saw it: the event loop, aiohttp's
request handling, the middleware, the handler's coroutines; the pool's thread."""

import asyncio
import concurrent.futures
import json
import os
import random
import statistics
import sys
import time

from pbp_common import (CpuBuckets, Truth, capture_stack, client_options, parse_args,
                        remember_chain)

HANDLERS = ("report", "compute")
# Every function whose chain of callers the truth records.
CHAINS = HANDLERS + ("fetch_rows", "sieve")
T = None
CPU = None
POOL = None

TEMPLATES = {
    "macros.html": (
        "{% macro cell(v, cls='num') -%}<td class='{{ cls }}'>{{ v }}</td>{%- endmacro %}"),
    "row.html": (
        "{% import 'macros.html' as m %}<tr>{{ m.cell(item.kind) }}"
        "{{ m.cell(item.name|title|truncate(12), 'name') }}"
        "{{ m.cell('%.2f'|format(item.price)) }}{{ m.cell(item.tags|sort|join(', ')) }}</tr>"),
    "report.html": (
        "{% import 'macros.html' as m %}<html><body><h1>{{ title|upper }}</h1>"
        "<p>{{ items|length }} items, mean {{ '%.3f'|format(stats.mean) }}, "
        "median {{ stats.median }}</p><table>"
        "{% for item in items|sort(attribute='price', reverse=True) %}"
        "{% include 'row.html' %}{% else %}<tr><td>none</td></tr>{% endfor %}</table>"
        "{% for tag, group in items|groupby('kind') %}<h2>{{ tag|e }}</h2>"
        "<ul>{% for i in group %}<li>{{ i.name|replace('-', ' ')|capitalize }}</li>"
        "{% endfor %}</ul>{% endfor %}</body></html>"),
}


def sieve(limit):
    """The primes below @limit, in a thread of the pool (bucket 'executor')."""
    t0 = time.thread_time()
    try:
        remember_stack("sieve")
        marks = bytearray([1]) * limit
        marks[:2] = b"\0\0"
        for i in range(2, int(limit ** 0.5) + 1):
            if marks[i]:
                marks[i * i::i] = bytes(len(range(i * i, limit, i)))
        return [i for i, v in enumerate(marks) if v]
    finally:
        CPU.add("executor", time.thread_time() - t0)


def remember_stack(name):
    remember_chain(T, CPU.lock, name, capture_stack(None, 2))


def make_app():
    import jinja2
    from aiohttp import web

    env = jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True)

    @web.middleware
    async def server_header(request, handler):
        response = await handler(request)
        response.headers["X-Corpus"] = request.path
        return response

    async def fetch_rows(n, q):
        """The data layer: rows as a driver hands them over, decoded from JSON."""
        remember_stack("fetch_rows")
        payload = json.dumps([{"name": "item-%d-%s" % (i, q),
                               "price": (i * 7919) % 1000 / 7.0,
                               "kind": ("book", "tool", "food")[i % 3],
                               "tags": ["T%d" % (i % k) for k in (2, 3, 5)]}
                              for i in range(n)])
        return json.loads(payload)

    async def load_items(n, q):
        rows = await fetch_rows(n, q)
        for row in rows:
            row["tags"] = sorted(row["tags"], key=str.lower)
        return rows

    async def report(request):
        t0 = time.thread_time()
        try:
            remember_stack("report")
            n = int(request.query.get("n", "30"))
            items = await load_items(n, request.query.get("q", "x"))
            prices = [i["price"] for i in items]
            stats = {"mean": statistics.fmean(prices), "median": statistics.median(prices)}
            html = env.get_template("report.html").render(title="report %d" % n,
                                                          items=items, stats=stats)
            return web.Response(text=html, content_type="text/html")
        finally:
            CPU.add("handlers", time.thread_time() - t0)

    async def compute(request):
        # The sieve runs in the pool while this handler waits and the loop serves
        # others: the handler's CPU is what it spends before and after the wait.
        t0 = time.thread_time()
        remember_stack("compute")
        limit = int(request.query.get("limit", "3000"))
        # Handing the sieve to the pool (a lock, a queue, waking a worker) is the
        # handler's CPU too: only the wait is left outside the timing.
        sieved = asyncio.get_running_loop().run_in_executor(POOL, sieve, limit)
        spent = time.thread_time() - t0
        primes = await sieved
        t0 = time.thread_time()
        try:
            # Resumed by its own task now: on 3.12+ aiohttp starts a request's task
            # eagerly, inside RequestHandler.start, which it has left by now.
            remember_stack("compute")
            gaps = sorted({b - a for a, b in zip(primes, primes[1:])}, key=lambda g: -g)
            return web.json_response({"count": len(primes), "gaps": gaps[:10],
                                      "stdev": statistics.pstdev(primes[-200:])})
        finally:
            CPU.add("handlers", spent + time.thread_time() - t0)

    app = web.Application(middlewares=[server_header])
    app.router.add_get("/report", report)
    app.router.add_get("/compute", compute)
    return app


async def serve(seconds, client_argv):
    from aiohttp import web
    runner = web.AppRunner(make_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    cl = await asyncio.create_subprocess_exec(*client_argv, str(port))
    deadline = time.monotonic() + 60
    while set(T.data["chains"]) != set(CHAINS) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    T["port"] = port
    T["handlers"] = list(HANDLERS)
    CPU.publish()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop and cl.returncode is None:
        await asyncio.sleep(0.2)
        CPU.publish()
    if cl.returncode is None:
        cl.kill()
        await cl.wait()
    await runner.cleanup()


async def client(port, stop, parent):
    import aiohttp
    base = "http://127.0.0.1:%d" % port

    async def one(session, rng):
        failures = 0
        while time.monotonic() < stop and os.getppid() == parent and failures < 50:
            if rng.random() < 0.6:
                url = "%s/report?n=%d&q=%s" % (base, rng.randint(10, 60), rng.choice("abc"))
            else:
                url = "%s/compute?limit=%d" % (base, rng.randint(20000, 60000))
            try:
                async with session.get(url) as resp:
                    await resp.read()
                failures = 0
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
                failures += 1
                await asyncio.sleep(0.05)
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(session, random.Random(i)) for i in range(8)))


def main():
    global T, CPU

    args = parse_args(client_options)
    if args.client:
        asyncio.run(client(args.client, time.monotonic() + args.seconds, args.parent))
        return 0
    T = Truth(args.truth)
    CPU = CpuBuckets(T, ["handlers", "executor"])
    T["chains"] = {}
    T["bucket_functions"] = {"handlers": ["make_app.<locals>.%s" % h for h in HANDLERS],
                             "executor": ["sieve"]}
    client_argv = [sys.executable, os.path.abspath(__file__), "--parent", str(os.getpid()),
                   "--seconds", str(args.seconds), "--client"]
    global POOL
    POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="sieve")
    asyncio.run(serve(args.seconds, client_argv))
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
