# SPDX-License-Identifier: GPL-2.0-only
"""Every writer on a profile whose stacks interleave C frames with Python ones (--native;
`test_writers FORMAT --native`, tests/unit/test_writers.c): byte for byte against
tests/golden/native/, then read back by parsers that share no code with the writers.

The fixture has what native frames must get right: objects with and without a
build-id, a stripped object's function named OBJECT+0xSTART, an offset unknown, a
function whose start the session did not give, an object the session never named (and
a name and object that need escaping), and libc.so.6 as two builds in two processes,
which pprof must keep apart as two mappings. A deliberate change of a format is
recorded with PBP_UPDATE_GOLDEN=1 and reviewed like code.
"""

import colorsys
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from lib.paths import REPO
from lib.writers import (FIXED_PERIOD, FORMATS, build_plain, check_chrome, check_golden,
                         check_pprof_header, check_speedscope, collapsed_counts, writer_output)

sys.path.insert(0, str(REPO / "tests" / "tools"))
from pprof_text import Profile, one  # noqa: E402

GOLDEN = REPO / "tests" / "golden" / "native"
SVG_NS = "{http://www.w3.org/2000/svg}"

LIBPY = "libpython3.11.so.1.0"
ZLIBMOD = "_zlib.cpython-311-x86_64-linux-gnu.so"
ODD_NAME, ODD_LIB = 'f\u00e9;<&>"q"', "lib x;y<1>.so"

# What tests/unit/test_writers.c's session said of the objects: (pid, base name) ->
# (path, build-id), and of the functions: (pid, base name, function) -> start.
OBJECTS = {
    (300, LIBPY): ("/usr/lib/x86_64-linux-gnu/" + LIBPY,
                   "5d1e8c2a47f03b9e6a1c0d2f3e4b5a6978c9d0e1"),
    (300, ZLIBMOD): ("/usr/lib/python3.11/lib-dynload/" + ZLIBMOD, ""),
    (300, "libz.so.1"): ("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
                         "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"),
    (300, "libc.so.6"): ("/usr/lib/x86_64-linux-gnu/libc.so.6",
                         "c3a1b2d4e5f60718293a4b5c6d7e8f9001122334"),
    (400, "libc.so.6"): ("/usr/lib/x86_64-linux-gnu/libc.so.6",
                         "9e8d7c6b5a49382716051f2e3d4c5b6a79881726"),
}
STARTS = {
    (300, LIBPY, "PyObject_Vectorcall"): 0x1a2b30,
    (300, LIBPY, "list_sort"): 0x2001f0,
    (300, "libz.so.1", "deflate"): 0x9c70,
    (300, "libz.so.1", "libz.so.1+0x3a40"): 0x3a40,
    (300, "libc.so.6", "__memmove_avx_unaligned_erms"): 0x19e6c0,
    (300, "libc.so.6", "__futex_abstimed_wait_common"): 0x8f3e0,
    (400, "libc.so.6", "__memmove_avx_unaligned_erms"): 0x1a0340,
}

P300 = "process 300 python3 ext.py;<module> (/srv/ext.py:5)"
P400 = "process 400 python3 other.py;<module> (/app/other.py:1)"
ZLIB_CALL = (f"run (/srv/ext.py:9);PyObject_Vectorcall+0x4a ({LIBPY});"
             f"zlib_compress+0x90 ({ZLIBMOD});deflate+0x31c (libz.so.1)")
COLLAPSED = {
    f"{P300};{ZLIB_CALL};__memmove_avx_unaligned_erms+0x2c (libc.so.6)": 40,
    f"{P300};{ZLIB_CALL};libz.so.1+0x3a40+0x22 (libz.so.1)": 25,
    f"{P400};__memmove_avx_unaligned_erms+0x2c (libc.so.6)": 20,
    f"{P300};run (/srv/ext.py:12);list_sort ({LIBPY});key (/srv/ext.py:3)": 10,
    "process 300 python3 ext.py;thread 301;Worker.run (/srv/ext.py:20);"
    "__futex_abstimed_wait_common+0x102 (libc.so.6)": 5,
    f'{P400};f\u00e9_<&>"q"+0x8 (lib x_y<1>.so)': 3,
}
# The native frames' names in the formats that keep ';' (speedscope, chrome).
NATIVE_NAMES = {
    f"PyObject_Vectorcall+0x4a ({LIBPY})", f"zlib_compress+0x90 ({ZLIBMOD})",
    "deflate+0x31c (libz.so.1)", "__memmove_avx_unaligned_erms+0x2c (libc.so.6)",
    "libz.so.1+0x3a40+0x22 (libz.so.1)", f"list_sort ({LIBPY})",
    "__futex_abstimed_wait_common+0x102 (libc.so.6)", f"{ODD_NAME}+0x8 ({ODD_LIB})",
}


@pytest.fixture(scope="module")
def native():
    binary = build_plain()
    return {fmt: writer_output(binary, fmt, args=["--native"]) for fmt in FORMATS}


@pytest.mark.parametrize("build", ["plain", "sanitizers"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_native_writer_matches_golden_file(fmt, build):
    check_golden(fmt, build, GOLDEN, args=["--native"])


def test_collapsed_names_native_frames_function_offset_object(native):
    assert collapsed_counts(native["collapsed"].decode()) == COLLAPSED


# --------------------------------------------------------------------------------------
# pprof

def mapping_of(prof, loc):
    mid = one(loc, "mapping_id")
    if not mid:
        return None
    (m,) = [m for m in prof.msg["mapping"] if one(m, "id") == mid]
    return m


def test_pprof_has_a_mapping_per_object_with_its_build_id(native):
    prof = Profile.parse(native["pprof"])
    check_pprof_header(prof, FIXED_PERIOD)
    maps = prof.msg.get("mapping", [])
    assert [one(m, "id") for m in maps] == list(range(1, len(maps) + 1))
    got = sorted((prof.s(one(m, "filename")), prof.s(one(m, "build_id"))) for m in maps)
    assert got == sorted(OBJECTS.values()), got
    for m in maps:
        # ELF vaddrs: every mapping starts at 0 and covers any address.
        assert one(m, "memory_start") == 0 and one(m, "file_offset") == 0, m
        assert one(m, "memory_limit") == 2**63 - 1, m
        assert one(m, "has_functions") is True, m


def test_pprof_native_locations_have_object_and_exact_address(native):
    prof = Profile.parse(native["pprof"])
    paths = {path: base for (pid, base), (path, bid) in OBJECTS.items()}
    seen = Counter()
    for smp in prof.msg["sample"]:
        labels = prof.labels(smp)
        for lid in smp["location_id"]:
            loc = prof.locations[lid]
            (line,) = loc["line"]
            fn = prof.functions[one(line, "function_id")]
            name, file = prof.s(one(fn, "name")), prof.s(one(fn, "filename"))
            m = mapping_of(prof, loc)
            if m is None:
                assert one(loc, "address") == 0, loc
                if name == ODD_NAME:
                    # An object the session never named: its base name, no mapping.
                    assert file == ODD_LIB
                    seen["unnamed object"] += 1
                continue
            # A native location: its function's file is its object's path, and the
            # offset is in the address, not in the line.
            path, bid = prof.s(one(m, "filename")), prof.s(one(m, "build_id"))
            base = paths[path]
            assert file == path, (name, file, path)
            assert one(line, "line") == 0, loc
            assert OBJECTS[(labels["pid"], base)] == (path, bid), (labels, name, bid)
            start = STARTS.get((labels["pid"], base, name))
            if start is None:
                assert name == "zlib_compress" and one(loc, "address") == 0, loc
            else:
                seen[(labels["pid"], name, one(loc, "address") - start)] += 1
    assert seen["unnamed object"] == 1
    # Offsets as the collapsed names give them; list_sort's is unknown: its start.
    assert {k for k in seen if k != "unnamed object"} == {
        (300, "PyObject_Vectorcall", 0x4a), (300, "deflate", 0x31c),
        (300, "__memmove_avx_unaligned_erms", 0x2c), (300, "libz.so.1+0x3a40", 0x22),
        (300, "list_sort", 0), (300, "__futex_abstimed_wait_common", 0x102),
        (400, "__memmove_avx_unaligned_erms", 0x2c)}


def test_pprof_keeps_one_base_name_of_two_builds_apart(native):
    prof = Profile.parse(native["pprof"])
    leaf_bid = {}
    for smp in prof.msg["sample"]:
        loc = prof.locations[smp["location_id"][0]]
        fn = prof.functions[one(loc["line"][0], "function_id")]
        if prof.s(one(fn, "name")) == "__memmove_avx_unaligned_erms":
            m = mapping_of(prof, loc)
            leaf_bid[prof.labels(smp)["pid"]] = (prof.s(one(m, "build_id")),
                                                 one(loc, "address"))
    assert leaf_bid == {300: (OBJECTS[(300, "libc.so.6")][1], 0x19e6c0 + 0x2c),
                        400: (OBJECTS[(400, "libc.so.6")][1], 0x1a0340 + 0x2c)}


def test_pprof_of_native_profile_matches_collapsed(native):
    """Each sample's stack, named from the pprof alone (a native frame's offset is its
    address less its function's start), is the collapsed line of the same stack."""
    prof = Profile.parse(native["pprof"])
    base_of = {path: base for (pid, base), (path, bid) in OBJECTS.items()}
    merged = Counter()
    for smp in prof.msg["sample"]:
        pid = prof.labels(smp)["pid"]
        names = []
        for lid in reversed(smp["location_id"]):
            loc = prof.locations[lid]
            fn = prof.functions[one(loc["line"][0], "function_id")]
            name, file = prof.s(one(fn, "name")), prof.s(one(fn, "filename"))
            line = one(loc["line"][0], "line")
            m = mapping_of(prof, loc)
            if m is not None or name == ODD_NAME:
                base = base_of.get(file, file)
                start = STARTS.get((pid, base, name))
                off = {ODD_NAME: 8, "zlib_compress": 0x90, "list_sort": None}.get(
                    name, one(loc, "address") - (start or 0))
                names.append(f"{name}{'' if off is None else f'+{off:#x}'} ({base})")
            elif file:
                names.append(f"{name} ({file}{f':{line}' if line else ''})")
            else:
                names.append(name)
        merged[";".join(n.replace(";", "_") for n in names)] += smp["value"][0]
    assert dict(merged) == COLLAPSED


# --------------------------------------------------------------------------------------
# speedscope, chrome, SVG

def test_speedscope_native_frames_follow_schema_and_carry_object_in_name(native):
    data = json.loads(native["speedscope"])
    check_speedscope(data, FIXED_PERIOD)
    frames = data["shared"]["frames"]
    natives = [f for f in frames if f["name"] in NATIVE_NAMES]
    assert {f["name"] for f in natives} == NATIVE_NAMES
    # The object is in the name; "file" and "line" are a source position.
    assert all("file" not in f and "line" not in f for f in natives), natives


def test_chrome_native_events_are_named_as_collapsed(native):
    data = json.loads(native["chrome"])
    threads = check_chrome(data)
    native_events = [e for evs in threads.values() for e in evs if e["cat"] == "native"]
    assert native_events
    assert {e["name"] for e in native_events} == NATIVE_NAMES
    for e in native_events:
        assert e["name"].endswith(f"({e['args']['object']})"), e
        if "offset" in e["args"]:
            assert f"+{e['args']['offset']:#x} (" in e["name"], e
        else:
            assert e["name"] == f"list_sort ({LIBPY})", e


def _hls(fill):
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, l, s = colorsys.rgb_to_hls(r, g, b)
    return h * 360, l, s


def test_svg_native_frames_have_a_hue_per_object_apart_from_python(native):
    root = ET.fromstring(native["svg"])
    hues = {}
    for g in root.find(f"{SVG_NS}g[@id='frames']"):
        title = g.find(f"{SVG_NS}title").text.split("\n")[0]
        fill = g.find(f"{SVG_NS}rect").get("fill")
        hue, light, sat = _hls(fill)
        m = re.fullmatch(r".*?(?:\+0x[0-9a-f]+)? \((lib[^()]*|_zlib[^()]*)\)", title)
        if g.get("class") == "c":
            assert m, f"class c on a frame that is not native: {title}"
            # Browns, ochres, khakis: duller than the flame colours that share them.
            assert 14 <= hue <= 65 and 0.33 <= sat <= 0.43 and 0.44 <= light <= 0.58, \
                (title, fill)
            hues.setdefault(m[1], set()).add(round(hue))
        else:
            assert not m, f"native frame {title} not in class c"
            if g.get("class") == "u":
                assert sat > 0.6, (title, fill)    # the flame colours are saturated
    assert set(hues) == {LIBPY, ZLIBMOD, "libz.so.1", "libc.so.6", ODD_LIB}
    # One hue per object, whatever the function (lightness picks the function).
    for lib, hs in hues.items():
        assert max(hs) - min(hs) <= 2, (lib, hs)
    assert abs(min(hues["libc.so.6"]) - min(hues["libz.so.1"])) > 5, hues
    legend = root.find(f"{SVG_NS}g[@id='legend']")
    labels = [t.text for t in legend.findall(f"{SVG_NS}text")]
    assert labels[-1] == "native code"
    assert legend.findall(f"{SVG_NS}rect")[-1].get("class") == "c"


def test_svg_without_native_frames_has_no_native_legend():
    out = writer_output(build_plain(), "svg")
    assert b"native code" not in out and b'class="c"' not in out


# --------------------------------------------------------------------------------------
# Native frames with DWARF line info (`test_writers FORMAT --native-lines`)

EXTMOD = "pbpext.cpython-313-x86_64-linux-gnu.so"
EXTSRC = "/build/ext/pbpext.c"
CXXSPIN = "pbp::Burner::spin(unsigned long) const"
MEMSRC = "../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S"
L500 = "process 500 python3 ext.py;<module> (/srv/ext.py:"
LINES_COLLAPSED = {
    f"{L500}5);pbpext_burn (pbpext.c:27);pbpext_spin (pbpext.c:17)": 30,
    f"{L500}5);pbpext_burn (pbpext.c:27);pbpext_spin (pbpext.c:16)": 10,
    f"{L500}6);{CXXSPIN} (pbpcxx.cc:24)": 6,
    f"{L500}7);_PyObject_MakeTpCall+0x4a (python3.13);memcpy (memmove-vec-unaligned-erms.S)": 4,
}
# (function, object, source path, line or None) of each native frame with a source.
LINES_SOURCED = {
    ("pbpext_burn", EXTMOD, EXTSRC, 27), ("pbpext_spin", EXTMOD, EXTSRC, 17),
    ("pbpext_spin", EXTMOD, EXTSRC, 16), (CXXSPIN, "libpbpcxx.so", "/build/cxx/pbpcxx.cc", 24),
    ("memcpy", "libc.so.6", MEMSRC, None),
}


@pytest.fixture(scope="module")
def native_lines():
    binary = build_plain()
    return {fmt: writer_output(binary, fmt, args=["--native-lines"]) for fmt in FORMATS}


def test_collapsed_names_lined_native_frames_function_source_line(native_lines):
    """`FUNCTION (SOURCE:LINE)` with the source's base name, one frame per line; a
    frame without line info beside them keeps `FUNCTION+0xOFF (OBJECT)`."""
    assert collapsed_counts(native_lines["collapsed"].decode()) == LINES_COLLAPSED


def test_svg_names_lined_native_frames_as_collapsed_coloured_by_object(native_lines):
    root = ET.fromstring(native_lines["svg"])
    titles = {}
    for g in root.find(f"{SVG_NS}g[@id='frames']"):
        title = g.find(f"{SVG_NS}title").text.split("\n")[0]
        titles[title] = (g.get("class"), _hls(g.find(f"{SVG_NS}rect").get("fill"))[0])
    want = {"pbpext_burn (pbpext.c:27)", "pbpext_spin (pbpext.c:17)",
            "pbpext_spin (pbpext.c:16)", f"{CXXSPIN} (pbpcxx.cc:24)",
            "memcpy (memmove-vec-unaligned-erms.S)"}
    assert want <= set(titles), titles
    assert all(titles[t][0] == "c" for t in want), titles
    # Still one hue per object: the two pbpext frames share theirs, the C++ one differs.
    ext = {round(titles[t][1]) for t in want if t.startswith("pbpext_")}
    assert max(ext) - min(ext) <= 2 and \
        abs(min(ext) - titles[f"{CXXSPIN} (pbpcxx.cc:24)"][1]) > 2, titles


def test_speedscope_lined_native_frames_keep_object_in_name_and_source_in_file(native_lines):
    data = json.loads(native_lines["speedscope"])
    check_speedscope(data, FIXED_PERIOD)
    got = {(f["name"], f.get("file"), f.get("line")) for f in data["shared"]["frames"]
           if f.get("file") and not f["file"].endswith(".py")}
    assert got == {(f"{fn} ({obj})", src, line) for fn, obj, src, line in LINES_SOURCED}


def test_chrome_lined_native_events_are_named_as_collapsed(native_lines):
    data = json.loads(native_lines["chrome"])
    threads = check_chrome(data)
    got = {(e["name"], e["args"]["object"], e["args"].get("file"), e["args"].get("line"))
           for evs in threads.values() for e in evs
           if e["cat"] == "native" and "file" in e["args"]}
    want = set()
    for fn, obj, src, line in LINES_SOURCED:
        base = src.rsplit("/", 1)[-1]
        want.add((f"{fn} ({base}{'' if line is None else f':{line}'})", obj, src, line))
    assert got == want


def test_pprof_lined_native_frames_have_source_file_line_and_mapping(native_lines):
    """A Function per (name, source) with the source's path, a Line with the line, and
    the Location still in its object's Mapping, at its function's start."""
    prof = Profile.parse(native_lines["pprof"])
    starts = {("pbpext_burn", EXTMOD): 0x1150, ("pbpext_spin", EXTMOD): 0x1120,
              (CXXSPIN, "libpbpcxx.so"): 0x110a, ("memcpy", "libc.so.6"): 0x19e6c0,
              ("_PyObject_MakeTpCall", "python3.13"): 0x1f3a20 + 0x4a}
    got = set()
    for lid, loc in prof.locations.items():
        m = mapping_of(prof, loc)
        if m is None:
            continue
        name, file, line = prof.frame(lid)
        obj = prof.s(one(m, "filename")).rsplit("/", 1)[-1]
        assert one(loc, "address") == starts[(name, obj)], (name, obj, loc)
        if name != "_PyObject_MakeTpCall":
            got.add((name, obj, file, line or None))
        else:
            assert file == "/usr/bin/python3.13" and not line, (name, file, line)
    assert got == LINES_SOURCED
    # has_filenames and has_line_numbers on the mappings whose frames have sources.
    lined = {prof.s(one(m, "filename")).rsplit("/", 1)[-1]
             for m in prof.msg["mapping"] if one(m, "has_line_numbers")}
    assert lined == {EXTMOD, "libpbpcxx.so", "libc.so.6"}, lined
    assert all(one(m, "has_filenames") == one(m, "has_line_numbers")
               for m in prof.msg["mapping"])
