# SPDX-License-Identifier: GPL-2.0-only
"""A small Chrome DevTools Protocol client for tests that open our outputs in a real
browser (headless Chromium, Debian's `chromium` package).

It talks to the browser over --remote-debugging-pipe: the browser reads commands on
its fd 3 and writes replies and events on its fd 4, each a JSON object terminated by a
NUL byte. No port, no websocket library, and nothing another test run could connect
to. Every wait has a deadline, so a test can fail but never hang, and close() kills
the browser's whole process group (it forks renderers and helpers).

    from cdp import Browser

    with Browser() as b:
        page = b.new_page()
        page.navigate("file:///tmp/x.svg")
        assert page.evaluate("document.title") == "..."
        page.click(100, 200)
        page.screenshot("/tmp/x.png")
        assert not page.errors(), page.errors()

A page is a target attached with flatten=True: its commands carry a sessionId and
share the one pipe. Page, Runtime and Log are enabled on it, so console errors,
uncaught exceptions and browser log errors are collected from the start (see
Page.errors()). Input that opens a JavaScript dialog (alert/prompt) does not complete
until the dialog is closed: send it with block=False, answer with handle_dialog(),
then finish() it.
"""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from base64 import b64decode

DEFAULT_TIMEOUT = 30.0

# Quiet, reproducible, offline: no first-run UI, no background fetches, no GPU.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    "--remote-debugging-pipe",
]


class CDPError(Exception):
    """The browser answered a command with an error, died, or did not answer in time."""


class JSError(CDPError):
    """Runtime.evaluate threw; .details holds the exceptionDetails."""

    def __init__(self, message, details):
        super().__init__(message)
        self.details = details


def find_chromium():
    """The Chromium binary: $PBP_CHROMIUM, Debian's real binary, or one on PATH."""
    env = os.environ.get("PBP_CHROMIUM")
    if env:
        return env
    # Debian's /usr/bin/chromium is a shell wrapper; the binary behind it is enough
    # for headless use and keeps the wrapper's checks out of our stderr.
    if os.access("/usr/lib/chromium/chromium", os.X_OK):
        return "/usr/lib/chromium/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _high_fd(fd):
    """A copy of fd numbered 10 or more (close-on-exec), so that moving it to 3 or 4 in
    the child cannot overwrite the other pipe end."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    """One headless Chromium process and the pipe to it."""

    def __init__(self, binary=None, timeout=DEFAULT_TIMEOUT, window=(1280, 1024),
                 args=(), log_path=None):
        self.timeout = timeout
        self.binary = binary or find_chromium()
        if not self.binary:
            raise CDPError("no Chromium found (apt-get install chromium, or set "
                           "PBP_CHROMIUM)")
        self.profile_dir = tempfile.mkdtemp(prefix="pbp-chromium-")
        self._cond = threading.Condition()
        self._results = {}
        self._events = []
        self._next_id = 0
        self._write_lock = threading.Lock()
        self._eof = False
        self.proc = None
        self._to_browser = self._from_browser = None

        cmd_r, cmd_w = (_high_fd(fd) for fd in os.pipe())
        resp_r, resp_w = (_high_fd(fd) for fd in os.pipe())

        def child_fds():
            # dup2 clears close-on-exec: exactly fds 3 and 4 reach the browser.
            os.dup2(cmd_r, 3)
            os.dup2(resp_w, 4)

        argv = [self.binary] + FLAGS + [
            f"--user-data-dir={self.profile_dir}",
            f"--window-size={window[0]},{window[1]}",
        ] + list(args) + ["about:blank"]
        self.log_path = log_path or os.path.join(self.profile_dir, "chromium.log")
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, close_fds=False,
                                             preexec_fn=child_fds, start_new_session=True)
        finally:
            os.close(cmd_r)
            os.close(resp_w)
        self._to_browser, self._from_browser = cmd_w, resp_r
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        try:
            self.version = self.call("Browser.getVersion")
        except BaseException:
            self.close()
            raise

    # -- context manager ---------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the pipe ----------------------------------------------------------------------
    def _read_loop(self):
        buf = bytearray()
        try:
            while True:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                start = 0
                while True:
                    end = buf.find(b"\0", start)
                    if end < 0:
                        break
                    self._dispatch(json.loads(buf[start:end]))
                    start = end + 1
                del buf[:start]
        except (OSError, ValueError):
            pass
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _dispatch(self, msg):
        with self._cond:
            if "id" in msg:
                self._results[msg["id"]] = msg
            else:
                self._events.append(msg)
            self._cond.notify_all()

    def _wait(self, ready, timeout, what):
        """Waits under the lock until ready() returns something not None."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._cond:
            while True:
                got = ready()
                if got is not None:
                    return got
                if self._eof:
                    raise CDPError(f"browser closed the pipe while waiting for {what} "
                                   f"(log: {self.log_path})")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"timed out waiting for {what}")
                self._cond.wait(left)

    def send(self, method, params=None, session=None):
        """Sends a command without waiting; returns its id for result()."""
        with self._cond:
            self._next_id += 1
            msg_id = self._next_id
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        with self._write_lock:
            try:
                while data:
                    data = data[os.write(self._to_browser, data):]
            except OSError as e:
                raise CDPError(f"{method}: cannot write to the browser: {e}") from e
        return msg_id

    def result(self, msg_id, timeout=None, what="reply"):
        """The result of command msg_id; raises CDPError if it failed."""
        msg = self._wait(lambda: self._results.pop(msg_id, None), timeout,
                         f"{what} (id {msg_id})")
        if "error" in msg:
            raise CDPError(f"{what}: {msg['error']}")
        return msg.get("result", {})

    def call(self, method, params=None, session=None, timeout=None):
        return self.result(self.send(method, params, session), timeout, method)

    # -- events ------------------------------------------------------------------------
    def mark(self):
        """A position in the event log: wait_event(since=mark) only sees later events."""
        with self._cond:
            return len(self._events)

    def events(self, method=None, session=None, since=0):
        with self._cond:
            return [e for e in self._events[since:]
                    if (method is None or e.get("method") == method)
                    and (session is None or e.get("sessionId") == session)]

    def wait_event(self, method, session=None, since=0, predicate=None, timeout=None):
        """The first event `method` (of `session`) at or after `since`."""
        def ready():
            for e in self._events[since:]:
                if e.get("method") == method and (session is None or
                                                  e.get("sessionId") == session) \
                        and (predicate is None or predicate(e.get("params", {}))):
                    return e.get("params", {})
            return None
        return self._wait(ready, timeout, f"event {method}")

    # -- pages ---------------------------------------------------------------------------
    def new_page(self, url="about:blank"):
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        return page

    # -- shutdown ------------------------------------------------------------------------
    def close(self):
        """Closes the browser, then kills its process group; safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None and not self._eof:
                try:
                    self.send("Browser.close")
                    proc.wait(5)
                except (CDPError, subprocess.TimeoutExpired):
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for attr in ("_to_browser", "_from_browser"):
            fd = getattr(self, attr)
            if fd is not None:
                setattr(self, attr, None)
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self.profile_dir:
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            self.profile_dir = None


class Page:
    """One attached tab: navigation, script, input, screenshots and collected errors."""

    def __init__(self, browser, target_id, session_id):
        self.browser = browser
        self.target_id = target_id
        self.session = session_id
        self._since = browser.mark()

    def send(self, method, params=None):
        return self.browser.send(method, params, self.session)

    def result(self, msg_id, timeout=None):
        return self.browser.result(msg_id, timeout)

    def call(self, method, params=None, timeout=None):
        return self.browser.call(method, params, self.session, timeout)

    def wait_event(self, method, since=None, predicate=None, timeout=None):
        return self.browser.wait_event(method, self.session,
                                       self._since if since is None else since,
                                       predicate, timeout)

    def navigate(self, url, timeout=None):
        """Loads url and waits for its load event; returns the seconds it took."""
        mark = self.browser.mark()
        start = time.monotonic()
        res = self.call("Page.navigate", {"url": url}, timeout)
        if res.get("errorText"):
            raise CDPError(f"navigate {url}: {res['errorText']}")
        self.wait_event("Page.loadEventFired", since=mark, timeout=timeout)
        return time.monotonic() - start

    def evaluate(self, expression, timeout=None, await_promise=False):
        """The JSON value of a JavaScript expression; raises JSError if it throws."""
        res = self.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True,
            "awaitPromise": await_promise}, timeout)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text")
            raise JSError(f"{expression[:200]!r} threw: {text}", d)
        return res.get("result", {}).get("value")

    def finish(self, pending, timeout=None):
        """Waits for the replies of commands sent with block=False."""
        return [self.result(msg_id, timeout) for msg_id in pending]

    def _input(self, method, events, block):
        # Sent back to back: the browser handles them in order, and one that opens a
        # dialog holds up the rest until the dialog is answered.
        pending = [self.send(method, params) for params in events]
        if not block:
            return pending
        self.finish(pending)
        return None

    def move(self, x, y, block=True):
        return self._input("Input.dispatchMouseEvent",
                           [{"type": "mouseMoved", "x": x, "y": y}], block)

    def click(self, x, y, block=True):
        """A left click at CSS pixel (x, y). With block=False the events are only sent
        and their ids returned for finish(): a click that opens a dialog does not
        complete until handle_dialog() answers it."""
        press = {"x": x, "y": y, "button": "left", "clickCount": 1}
        return self._input("Input.dispatchMouseEvent", [
            {"type": "mouseMoved", "x": x, "y": y},
            dict(press, type="mousePressed"), dict(press, type="mouseReleased")], block)

    def key(self, key, code=None, modifiers=0, key_code=0, block=True):
        """Presses and releases a key (modifiers: 1 Alt, 2 Ctrl, 4 Meta, 8 Shift);
        block as for click()."""
        base = {"key": key, "code": code or key, "modifiers": modifiers,
                "windowsVirtualKeyCode": key_code}
        return self._input("Input.dispatchKeyEvent", [
            dict(base, type="rawKeyDown"), dict(base, type="keyUp")], block)

    def handle_dialog(self, accept=True, prompt_text=None, since=None, timeout=None):
        """Waits for a JavaScript dialog and answers it; returns the dialog's params."""
        opened = self.wait_event("Page.javascriptDialogOpening", since=since,
                                 timeout=timeout)
        params = {"accept": accept}
        if prompt_text is not None:
            params["promptText"] = prompt_text
        self.call("Page.handleJavaScriptDialog", params, timeout)
        return opened

    def screenshot(self, path=None, timeout=None):
        """A PNG of the viewport; also written to path if given."""
        png = b64decode(self.call("Page.captureScreenshot", {"format": "png"},
                                  timeout)["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def errors(self):
        """Console errors and assertions, uncaught exceptions and browser log errors
        seen on this page since it was attached, as readable strings."""
        out = []
        for e in self.browser.events(session=self.session, since=self._since):
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + (d.get("exception", {}).get("description")
                                            or d.get("text", "?")))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", "")))
                                for a in p.get("args", []))
                out.append(f"console.{p['type']}: {args}")
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get(
                    "level") == "error":
                entry = p["entry"]
                out.append(f"log ({entry.get('source')}): {entry.get('text')} "
                           f"{entry.get('url', '')}".rstrip())
        return out
