#!/usr/bin/env python3
"""Validate ember's pprof output (docs/consumers.md §5) with a protobuf decoder
written here against perftools.profiles (proto/profile.proto): standard
library only.

usage: check_pprof.py FILE.pb.gz --profile NAME [--go]

--go also runs `go tool pprof` on the file when Go is installed (a loud SKIP
line otherwise)."""
import gzip
import os
import shutil
import subprocess
import sys

from synthetic_expect import DURATION_NS, HOSTILE_NAMES, INTERVAL_NS, PROFILES, START_UNIX_NS, Checker, checker_args, thread_totals


class DecodeError(Exception):
    pass


def varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def fields(buf):
    """(field number, wire type, value) of every field; value is an int for
    varints and bytes for length-delimited fields."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise DecodeError("field number 0")
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise DecodeError("truncated length-delimited field %d" % num)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise DecodeError("wire type %d" % wt)
        if i > len(buf):
            raise DecodeError("truncated fixed field")
        yield num, wt, v


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def repeated_ints(items):
    """A repeated scalar: packed (one length-delimited field) or not."""
    out = []
    for wt, v in items:
        if wt == 2:
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(int64(x))
        else:
            out.append(int64(v))
    return out


def message(buf, scalars=(), repeated=(), messages=()):
    """Decode buf into a dict: scalars (last value wins), repeated scalars,
    repeated submessages (raw bytes)."""
    d = {k: 0 for k in scalars}
    rep = {k: [] for k in repeated}
    msgs = {k: [] for k in messages}
    for num, wt, v in fields(buf):
        if num in rep:
            rep[num].append((wt, v))
        elif num in msgs:
            if wt != 2:
                raise DecodeError("field %d: message with wire type %d" % (num, wt))
            msgs[num].append(v)
        elif num in d:
            if wt != 0:
                raise DecodeError("field %d: scalar with wire type %d" % (num, wt))
            d[num] = int64(v)
    for k, items in rep.items():
        d[k] = repeated_ints(items)
    d.update(msgs)
    return d


def decode_profile(raw):
    top = {"strings": [], "time_nanos": []}
    parts = {1: [], 2: [], 3: [], 4: [], 5: [], 11: []}
    scalars = {}
    comments = []
    for num, wt, v in fields(raw):
        if num in parts:
            if wt != 2:
                raise DecodeError("Profile field %d with wire type %d" % (num, wt))
            parts[num].append(v)
        elif num == 6:
            if wt != 2:
                raise DecodeError("string_table with wire type %d" % wt)
            top["strings"].append(v)
        elif num == 9:
            top["time_nanos"].append(int64(v))
        elif num == 13:
            comments.append((wt, v))
        elif wt == 0:
            scalars[num] = int64(v)
    prof = {
        "sample_type": [message(m, scalars=(1, 2)) for m in parts[1]],
        "samples": [], "mappings": [], "locations": [], "functions": [],
        "period_type": [message(m, scalars=(1, 2)) for m in parts[11]],
        "strings": top["strings"], "time_nanos": top["time_nanos"],
        "duration_nanos": scalars.get(10, 0), "period": scalars.get(12, 0),
        "default_sample_type": scalars.get(14, 0), "comments": repeated_ints(comments),
    }
    for m in parts[2]:
        s = message(m, repeated=(1, 2), messages=(3,))
        prof["samples"].append({
            "locations": s[1], "values": s[2],
            "labels": [message(lab, scalars=(1, 2, 3, 4)) for lab in s[3]]})
    for m in parts[3]:
        prof["mappings"].append(message(m, scalars=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)))
    for m in parts[4]:
        loc = message(m, scalars=(1, 2, 3, 5), messages=(4,))
        loc["lines"] = [message(x, scalars=(1, 2, 3)) for x in loc[4]]
        prof["locations"].append(loc)
    for m in parts[5]:
        prof["functions"].append(message(m, scalars=(1, 2, 3, 4, 5)))
    return prof


def check_file(path, name, run_go):
    exp = PROFILES[name]
    c = Checker("pprof %s" % os.path.basename(path))
    data = open(path, "rb").read()
    if not c.check(data[:2] == b"\x1f\x8b", "gzip magic 1f 8b"):
        return c.done()
    raw = gzip.decompress(data)
    c.check(data[3] == 0 and data[4:8] == b"\0\0\0\0", "gzip header: no name, mtime 0 (deterministic)")
    try:
        prof = decode_profile(raw)
    except DecodeError as e:
        c.check(False, "protobuf decodes: %s" % e)
        return c.done()

    # strings
    strings = []
    for b in prof["strings"]:
        try:
            strings.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            c.check(False, "string is valid UTF-8: %r" % b)
            strings.append(b.decode("utf-8", "replace"))
    c.check(len(strings) > 0 and strings[0] == "", 'string_table[0] == ""')
    c.check(len(set(strings)) == len(strings), "strings are deduplicated")
    c.check(not any(ch < " " or "\x7f" <= ch < "\xa0" for s in strings for ch in s),
            "no control characters in strings")

    def s(i, what):
        if not c.check(0 <= i < len(strings), "%s: string index %d in range" % (what, i)):
            return "?"
        return strings[i]

    # types
    types = [(s(t[1], "sample_type"), s(t[2], "sample_type")) for t in prof["sample_type"]]
    c.check(types == [("samples", "count"), ("cpu", "nanoseconds")], "sample_type: %r" % types)
    pt = [(s(t[1], "period_type"), s(t[2], "period_type")) for t in prof["period_type"]]
    c.check(pt == [("cpu", "nanoseconds")], "period_type cpu/nanoseconds: %r" % pt)
    c.check(prof["period"] == INTERVAL_NS, "period %d == %d" % (prof["period"], INTERVAL_NS))
    c.check(prof["time_nanos"] == [START_UNIX_NS], "one time_nanos == start: %r" % prof["time_nanos"])
    c.check(prof["duration_nanos"] == DURATION_NS, "duration_nanos")
    comments = [s(i, "comment") for i in prof["comments"]]
    c.check(any(x.startswith("exporter: ember@") for x in comments), "exporter comment: %r" % comments)

    # ids
    def ids(items, what):
        got = [x[1] for x in items]
        c.check(all(i != 0 for i in got), "%s ids are non-zero" % what)
        c.check(len(set(got)) == len(got), "%s ids are unique" % what)
        return {x[1]: x for x in items}
    mappings = ids(prof["mappings"], "mapping")
    locations = ids(prof["locations"], "location")
    functions = ids(prof["functions"], "function")
    for m in mappings.values():
        s(m[5], "mapping filename")
        c.check(m[7] == 1, "mapping %d has_functions" % m[1])
    fkeys = set()
    for f in functions.values():
        for k in (2, 3, 4):
            s(f[k], "function field %d" % k)
        fkeys.add((f[2], f[3], f[4], f[5]))
    c.check(len(fkeys) == len(functions), "functions are deduplicated")
    lkeys = set()
    for loc in locations.values():
        c.check(loc[2] == 0 or loc[2] in mappings, "location %d: mapping %d exists" % (loc[1], loc[2]))
        c.check(len(loc["lines"]) > 0, "location %d has lines" % loc[1])
        for ln in loc["lines"]:
            c.check(ln[1] in functions, "location %d: function %d exists" % (loc[1], ln[1]))
        lkeys.add((loc[2], tuple((ln[1], ln[2]) for ln in loc["lines"])))
    c.check(len(lkeys) == len(locations), "locations are deduplicated")

    # samples
    by_stack = {}
    totals = {}
    total = 0
    for smp in prof["samples"]:
        vals = smp["values"]
        if not c.check(len(vals) == len(types), "value count %d == sample_type count" % len(vals)):
            continue
        c.check(vals[0] > 0 and vals[1] == vals[0] * prof["period"], "cpu value == samples x period")
        labels = {}
        for lab in smp["labels"]:
            key = s(lab[1], "label key")
            labels[key] = s(lab[2], "label str") if lab[2] else lab[3]
        c.check(isinstance(labels.get("tid"), int) and isinstance(labels.get("pid"), int),
                "tid and pid num labels: %r" % labels)
        pid, tid = labels.get("pid"), labels.get("tid")
        if (pid, tid) in exp["threads"] and exp["threads"][(pid, tid)]:
            c.check(labels.get("thread") == exp["threads"][(pid, tid)], "thread label %r" % labels.get("thread"))
        leaf_first = []
        for lid in smp["locations"]:
            if c.check(lid in locations, "sample location %d exists" % lid):
                for ln in locations[lid]["lines"]:   # inlined callees first
                    f = functions.get(ln[1])
                    leaf_first.append(s(f[2], "function name") if f else "?")
        key = (pid, tid, tuple(reversed(leaf_first)))
        by_stack[key] = by_stack.get(key, 0) + vals[0]
        totals[(pid, tid)] = totals.get((pid, tid), 0) + vals[0]
        total += vals[0]
    c.check(total == exp["total"], "total samples %d == %d" % (total, exp["total"]))
    c.check(totals == thread_totals(exp), "per-thread totals %r" % totals)
    if exp["stacks"] is not None:
        c.check(by_stack == exp["stacks"], "stacks (leaf-first locations, reversed) match the profile:\n  %r" % by_stack)
    if name.startswith("mixed"):
        heavy = [smp for smp in prof["samples"] if smp["values"][0] == 700]
        if c.check(len(heavy) == 1, "one sample of 700"):
            first = locations[heavy[0]["locations"][0]]
            leaf = functions[first["lines"][0][1]]
            c.check(strings[leaf[2]] == "cv::hlineSmooth", "leaf first: %r" % strings[leaf[2]])
            c.check(first["lines"][0][2] == 1200, "leaf line 1200")
        py = [f for f in functions.values() if strings[f[2]] == "Model.forward"]
        c.check(len(py) == 1 and strings[py[0][4]] == "model.py" and py[0][5] == 10,
                "Python function: filename and start_line (first_line)")
        maps = sorted(strings[m[5]] for m in mappings.values())
        c.check(maps == sorted(["python3.11", "libopencv_imgproc.so.406", "libc.so.6",
                                "[kernel.kallsyms]", "libopenblasp-r0.3.21.so"]), "mappings: %r" % maps)
        c.check(strings[mappings[1][5]] == "python3.11", "mapping 1 is the main binary guess")
    if name == "inline":
        c.check(len(locations) == 4, "inline: 4 locations (main, foo+bar+baz, foo, [unknown]): %d" % len(locations))
        chains = [[strings[functions[ln[1]][2]] for ln in loc["lines"]] for loc in locations.values()]
        c.check(["baz", "bar", "foo"] in chains, "inline: one location, inlined callees first: %r" % chains)
        c.check(["foo"] in chains, "inline: foo alone is another location")
        c.check([m[10] for m in mappings.values()] == [1], "inline: has_inline_frames")
    if name == "hostile":
        want = [n.replace("\t", " ").replace("\n", " ").replace("\x01", " ").replace("\x1f", " ").replace("\x7f", " ")
                or "[unknown]" for n in HOSTILE_NAMES]
        names = {strings[f[2]] for f in functions.values()}
        c.check(set(want) <= names, "hostile names (controls as spaces): missing %r" % (set(want) - names))

    if run_go:
        go = shutil.which("go")
        if not go:
            print("SKIP pprof %s: `go` not installed, go tool pprof not run" % os.path.basename(path))
        else:
            env = dict(os.environ)
            if "HOME" not in env and "GOCACHE" not in env:
                env["GOCACHE"] = os.path.join(os.path.dirname(os.path.abspath(path)), "gocache")
            for fmt in ("-top", "-raw"):
                r = subprocess.run([go, "tool", "pprof", "-symbolize=none", fmt, path], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                   timeout=120)
                c.check(r.returncode == 0, "go tool pprof %s exits 0: %s" % (fmt, r.stderr.strip()))
                if fmt == "-top" and r.returncode == 0 and exp["top"]:
                    rows = r.stdout.split("flat  flat%")[-1].splitlines()[1:]
                    first = rows[0].split(None, 5)[-1] if rows else ""
                    c.check(first == exp["top"], "go tool pprof -top: first row %r == %r" % (first, exp["top"]))
                if fmt == "-top" and r.returncode == 0 and exp["total"] == 0:
                    c.check("Total samples = 0" in r.stdout, "go tool pprof -top: empty profile")
    return c.done()


def main():
    a = checker_args("--go")
    return check_file(a.file, a.profile, a.go)


if __name__ == "__main__":
    sys.exit(main())
