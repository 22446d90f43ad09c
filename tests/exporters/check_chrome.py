#!/usr/bin/env python3
"""Validate ember's Chrome Trace Event output (docs/consumers.md §6, §8):
valid UTF-8 JSON, B/E balanced and nested per (pid, tid) in file order, ts
non-decreasing per thread, M names for every thread, and durations that add
up to samples x interval.  Standard library only.

usage: check_chrome.py FILE.trace.json --profile NAME"""
import json
import os
import sys

from synthetic_expect import INTERVAL_NS, PROFILES, Checker, check_hostile_names, checker_main, thread_totals

US = INTERVAL_NS / 1000.0


def check_file(path, name):
    exp = PROFILES[name]
    c = Checker("chrome %s" % os.path.basename(path))
    try:
        doc = json.loads(open(path, "rb").read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        c.check(False, "valid UTF-8 JSON: %s" % e)
        return c.done()
    c.check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "object form with traceEvents")
    c.check(doc.get("displayTimeUnit") == "ms", "displayTimeUnit ms")
    other = doc.get("otherData", {})
    c.check(str(other.get("exporter", "")).startswith("ember@"), "otherData.exporter")
    c.check(other.get("interval_ns") == INTERVAL_NS, "otherData.interval_ns")
    c.check(other.get("timeline") == ("sampled" if exp["timeline"] else "synthetic"),
            "otherData.timeline %r" % other.get("timeline"))
    events = doc["traceEvents"]

    thread_names, process_names = {}, {}
    stacks, last_ts, dur, root_dur, pairs = {}, {}, {}, {}, 0
    min_ts = None
    frames_seen = set()
    for ev in events:
        if not c.check(isinstance(ev, dict) and "ph" in ev, "every event has ph"):
            continue
        ph = ev["ph"]
        key = (ev.get("pid"), ev.get("tid"))
        if ph == "M":
            if ev.get("name") == "thread_name":
                thread_names[key] = ev["args"]["name"]
            elif ev.get("name") == "process_name":
                process_names[ev["pid"]] = ev["args"]["name"]
            continue
        if not c.check(ph in ("B", "E"), "only M, B, E events: %r" % ph):
            continue
        c.check(all(isinstance(ev.get(k), int) for k in ("pid", "tid")), "pid, tid are integers")
        ts = ev.get("ts")
        if not c.check(isinstance(ts, (int, float)) and ts >= 0, "ts is a number >= 0"):
            continue
        min_ts = ts if min_ts is None else min(min_ts, ts)
        c.check(ts >= last_ts.get(key, 0), "%r: ts non-decreasing (%r after %r)" % (key, ts, last_ts.get(key)))
        last_ts[key] = ts
        st = stacks.setdefault(key, [])
        ident = (ev.get("name"), ev.get("cat"), json.dumps(ev.get("args"), sort_keys=True))
        if ph == "B":
            c.check(isinstance(ev.get("name"), str) and ev["name"] != "", "B has a name")
            st.append((ident, ts))
            frames_seen.add(ev.get("name"))
        else:
            if not c.check(bool(st), "%r: E with an open B" % (key,)):
                continue
            top, begin = st.pop()
            c.check(top == ident, "%r: E closes the innermost B: %r vs %r" % (key, ident, top))
            pairs += 1
            dur[(key, top[0])] = dur.get((key, top[0]), 0.0) + (ts - begin)
            if not st:
                root_dur[key] = root_dur.get(key, 0.0) + (ts - begin)
    for key, st in stacks.items():
        c.check(not st, "%r: every B closed (%d open)" % (key, len(st)))

    for (pid, tid), tname in exp["threads"].items():
        c.check(thread_names.get((pid, tid)) == tname, "thread_name M event for %d/%d: %r"
                % (pid, tid, thread_names.get((pid, tid))))
        c.check(pid in process_names, "process_name M event for %d" % pid)
    if min_ts is not None:
        c.check(min_ts == 0, "ts relative to the first sample (min %r)" % min_ts)
    eps = 0.0011 * (pairs + 1)   # three decimals per ts
    for key, total in thread_totals(exp).items():
        got = root_dur.get(key, 0.0)
        c.check(abs(got - total * US) <= eps, "%r: root frames last %r us == %d samples x interval" % (key, got, total))
    if name.startswith("mixed"):
        main = (4242, 4242)
        for frame, n in (("cv::hlineSmooth", 700), ("Model.forward", 800), ("<module>", 850), ("ksys_read", 50)):
            got = dur.get((main, frame), 0.0)
            c.check(abs(got - n * US) <= eps, "%s lasts %r us == %d x interval" % (frame, got, n))
        got = dur.get(((4242, 4250), "dgemm_kernel_SKYLAKEX"), 0.0)
        c.check(abs(got - 100 * US) <= eps, "dgemm lasts 100 x interval")
    if name == "recursive":
        got = dur.get(((7, 7), "leaf"), 0.0)
        c.check(abs(got - 50 * US) <= eps, "leaf lasts 50 x interval (%r)" % got)
    if name == "hostile":
        check_hostile_names(c, frames_seen)
    return c.done()


if __name__ == "__main__":
    sys.exit(checker_main(check_file))
