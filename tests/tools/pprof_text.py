# SPDX-License-Identifier: GPL-2.0-only
"""Reads a pprof file without our code: gunzip, `protoc --decode` with our own copy of
the public schema (tests/tools/profile.proto), and a small parser of protoc's text
format. What comes back is plain Python: messages are dicts of lists, so a repeated
field and a field that occurs once read alike (msg["sample"], msg["period"][0]).

    prof = Profile.load("/tmp/x.pb.gz")
    for stack, values, labels in prof.samples():
        ...  # stack: leaf first, (function name, file name, line) per frame
"""

import codecs
import gzip
import re
import subprocess
from pathlib import Path

PROTO = Path(__file__).resolve().with_name("profile.proto")
TOKEN = re.compile(rb'\s*(?:(?P<close>\})|(?P<name>\w+)\s*(?P<open>\{)|'
                   rb'(?P<field>\w+):\s*(?P<value>"(?:[^"\\]|\\.)*"|[^\s]+))')


class DecodeError(Exception):
    pass


def protoc_text(raw):
    """protoc's text rendering of a serialized perftools.profiles.Profile."""
    p = subprocess.run(["protoc", f"--proto_path={PROTO.parent}",
                        "--decode=perftools.profiles.Profile", PROTO.name],
                       input=raw, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise DecodeError(f"protoc --decode failed: {p.stderr.decode(errors='replace')}")
    return p.stdout


def _scalar(text):
    if text.startswith(b'"'):
        return codecs.escape_decode(text[1:-1])[0].decode("utf-8", "surrogateescape")
    if text in (b"true", b"false"):
        return text == b"true"
    return int(text)


def parse_text(text):
    """protoc text format -> nested dicts of lists."""
    root = {}
    stack = [root]
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == b"":
            break
        m = TOKEN.match(text, pos)
        if not m:
            raise DecodeError(f"cannot parse protoc output at {text[pos:pos + 80]!r}")
        pos = m.end()
        if m["close"]:
            stack.pop()
        elif m["open"]:
            msg = {}
            stack[-1].setdefault(m["name"].decode(), []).append(msg)
            stack.append(msg)
        else:
            stack[-1].setdefault(m["field"].decode(), []).append(_scalar(m["value"]))
    if len(stack) != 1:
        raise DecodeError("unbalanced braces in protoc output")
    return root


def one(msg, field, default=0):
    """A singular field: its value, or the proto3 default when it was not written."""
    values = msg.get(field, [])
    assert len(values) <= 1, f"{field} occurs {len(values)} times"
    return values[0] if values else default


class Profile:
    def __init__(self, msg):
        self.msg = msg
        self.strings = msg.get("string_table", [])
        self.functions = {one(f, "id"): f for f in msg.get("function", [])}
        self.locations = {one(loc, "id"): loc for loc in msg.get("location", [])}

    @classmethod
    def load(cls, path, gzipped=True):
        raw = Path(path).read_bytes()
        return cls.parse(gzip.decompress(raw) if gzipped else raw)

    @classmethod
    def parse(cls, raw):
        return cls(parse_text(protoc_text(raw)))

    def s(self, index):
        return self.strings[index]

    def value_types(self, field="sample_type"):
        return [(self.s(one(v, "type")), self.s(one(v, "unit")))
                for v in self.msg.get(field, [])]

    def frame(self, location_id):
        """(function name, file name, line) of a location with one line."""
        loc = self.locations[location_id]
        (line,) = loc["line"]
        fn = self.functions[one(line, "function_id")]
        return self.s(one(fn, "name")), self.s(one(fn, "filename")), one(line, "line")

    def labels(self, sample):
        out = {}
        for lab in sample.get("label", []):
            key = self.s(one(lab, "key"))
            out[key] = self.s(one(lab, "str")) if one(lab, "str") else one(lab, "num")
        return out

    def samples(self):
        """(stack leaf first, values, labels) of every sample."""
        for smp in self.msg.get("sample", []):
            yield ([self.frame(i) for i in smp.get("location_id", [])],
                   smp.get("value", []), self.labels(smp))
