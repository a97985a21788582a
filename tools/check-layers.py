#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Holds user/ to its layer order (the Makefile's USES_* lines; docs/architecture.md).

Each argument is LAYER=USED,USED,...: the layers LAYER may include and call. Fails,
one line per finding, when
  - a file includes a header of a layer it may not use, or names a header of user/
    without its folder (the folder on the include line is what shows the direction);
  - an object of build/user/LAYER calls or reads a symbol defined in a layer it may not
    use (the include check alone misses a call made through a declaration of its own);
  - a folder of user/ is not a layer, so the build would leave it out;
  - with --order LAYER=FILE,FILE,..., an object of LAYER named there uses a symbol of
    one named after it (files sharing a private header, which includes cannot tell
    apart).
"""
import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER = os.path.join(REPO, "user")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def parse_layers(args):
    uses = {}
    for arg in args:
        name, _, used = arg.partition("=")
        uses[name] = set(filter(None, used.split(",")))
    for name, used in uses.items():
        unknown = used - set(uses)
        if unknown:
            sys.exit("check-layers: %s uses unknown layers %s" % (name, sorted(unknown)))
    return uses


def may_use(uses, layer, other):
    return other == layer or other in uses[layer]


def check_folders(uses):
    found = []
    for entry in sorted(os.listdir(USER)):
        path = os.path.join(USER, entry)
        if not os.path.isdir(path):
            found.append("user/%s: a file outside every layer's folder" % entry)
        elif entry not in uses:
            found.append("user/%s/: not a layer of the Makefile's LAYERS, so never built"
                         % entry)
    return found


def check_includes(uses, out):
    found = []
    for layer in sorted(uses):
        folder = os.path.join(USER, layer)
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".c", ".h")):
                continue
            rel = "user/%s/%s" % (layer, name)
            text = open(os.path.join(folder, name), encoding="utf-8").read()
            for m in INCLUDE.finditer(text):
                header = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                head, _, tail = header.rpartition("/")
                if not head:
                    if os.path.isfile(os.path.join(REPO, "include", header)) or \
                            os.path.isfile(os.path.join(out, header)):
                        continue
                    found.append("%s:%d: \"%s\" names no folder" % (rel, line, header))
                elif head not in uses:
                    found.append("%s:%d: \"%s\" is in no layer" % (rel, line, header))
                elif not may_use(uses, layer, head):
                    found.append("%s:%d: %s includes %s, a layer it may not use" %
                                 (rel, line, layer, header))
                elif not os.path.isfile(os.path.join(USER, head, tail)):
                    found.append("%s:%d: \"%s\" does not exist" % (rel, line, header))
    return found


def symbols(obj):
    res = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for row in res.stdout.splitlines():
        parts = row.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(sym)
        elif kind in "TDBRCVWG":
            defined.add(sym)
    return defined, undefined


def check_symbols(uses, out, orders):
    where, needs = {}, []
    for layer in sorted(uses):
        folder = os.path.join(out, "user", layer)
        if not os.path.isdir(folder):
            return ["%s: not built (run make first)" % folder]
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".o"):
                continue
            defined, undefined = symbols(os.path.join(folder, name))
            rel = "%s/%s" % (layer, name)
            for sym in defined:
                where[sym] = (layer, rel)
            needs.append((layer, rel, undefined))
    found = []
    for layer, rel, undefined in needs:
        order = orders.get(layer, [])
        me = os.path.basename(rel)[:-2]
        for sym in sorted(undefined):
            if sym not in where:
                continue
            other, other_rel = where[sym]
            if not may_use(uses, layer, other):
                found.append("%s uses %s from %s, a layer it may not use" %
                             (rel, sym, other_rel))
            elif other == layer and me in order:
                callee = os.path.basename(other_rel)[:-2]
                if callee in order and order.index(callee) > order.index(me):
                    found.append("%s uses %s from %s, which comes after it in %s's order"
                                 % (rel, sym, other_rel, layer))
    return found


def parse_orders(args, uses):
    orders = {}
    for arg in args or []:
        layer, _, files = arg.partition("=")
        if layer not in uses:
            sys.exit("check-layers: --order names unknown layer %s" % layer)
        orders[layer] = [f for f in files.split(",") if f]
        for name in orders[layer]:
            if not os.path.isfile(os.path.join(USER, layer, name + ".c")):
                sys.exit("check-layers: --order names user/%s/%s.c, which does not exist"
                         % (layer, name))
    return orders


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "build"),
                    help="the build directory whose objects are checked")
    ap.add_argument("--order", action="append", metavar="LAYER=FILE,FILE,...",
                    help="files of LAYER in the order they may call, first the one called")
    ap.add_argument("layers", nargs="+", help="LAYER=USED,USED,...")
    args = ap.parse_args()
    uses = parse_layers(args.layers)
    orders = parse_orders(args.order, uses)
    found = check_folders(uses)
    if not found:
        found = check_includes(uses, args.out) + check_symbols(uses, args.out, orders)
    for line in found:
        print("check-layers: " + line, file=sys.stderr)
    if found:
        sys.exit(1)
    print("check-layers: %d layers, no include or call goes up" % len(uses))


if __name__ == "__main__":
    main()
