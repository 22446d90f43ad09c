#!/usr/bin/env python3
"""Validate ember's speedscope output (docs/consumers.md §4, §8) beyond the
JSON Schema (validate_speedscope.js): what speedscope's importer relies on
and what the profile holds.  Standard library only.

usage: check_speedscope.py FILE.speedscope.json --profile NAME"""
import json
import os
import sys

from synthetic_expect import INTERVAL_NS, PROFILES, Checker, check_hostile_names, checker_main, profile_name, thread_totals

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def check_file(path, name):
    exp = PROFILES[name]
    c = Checker("speedscope %s" % os.path.basename(path))
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")        # strict: valid UTF-8
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError) as e:
        c.check(False, "valid UTF-8 JSON: %s" % e)
        return c.done()
    c.check(doc.get("$schema") == SCHEMA, "$schema is exact")
    c.check(str(doc.get("exporter", "")).startswith("ember@"), "exporter ember@...")
    c.check(doc.get("name") == exp["command"], "name is the command: %r" % doc.get("name"))
    frames = doc["shared"]["frames"]
    profiles = doc["profiles"]
    c.check(isinstance(doc.get("activeProfileIndex"), int) and 0 <= doc["activeProfileIndex"] < len(profiles),
            "activeProfileIndex in range")
    keys = [(f["name"], f.get("file"), f.get("line")) for f in frames]
    c.check(len(set(keys)) == len(keys), "frames are deduplicated")
    for f in frames:
        c.check(isinstance(f["name"], str) and f["name"] != "", "frame name non-empty: %r" % f)
        c.check("line" not in f or (isinstance(f["line"], int) and f["line"] > 0 and "file" in f),
                "line > 0, with a file: %r" % f)

    by_name = {}
    for p in profiles:
        c.check(p["type"] == "sampled" and p["unit"] == "nanoseconds", "sampled, nanoseconds")
        samples, weights = p["samples"], p["weights"]
        if not c.check(len(samples) == len(weights), "%s: samples.length == weights.length" % p["name"]):
            continue
        c.check(all(isinstance(w, int) and w > 0 for w in weights), "%s: every weight > 0" % p["name"])
        c.check(all(w % INTERVAL_NS == 0 for w in weights), "%s: weights are samples x interval" % p["name"])
        c.check(all(isinstance(i, int) and 0 <= i < len(frames) for s in samples for i in s),
                "%s: frame indices in range" % p["name"])
        c.check(all(len(s) > 0 for s in samples), "%s: no empty sample" % p["name"])
        c.check(p["startValue"] == 0 and p["endValue"] == sum(weights), "%s: endValue == total" % p["name"])
        by_name[p["name"]] = p

    expected = thread_totals(exp)
    if not expected:
        c.check(len(profiles) == 1 and not profiles[0]["samples"], "empty profile: one empty sampled profile")
        return c.done()
    want_names = [profile_name(exp, pid, tid) for pid, tid in sorted(expected)]
    c.check([p["name"] for p in profiles] == want_names, "one profile per thread, by (pid, tid): %r"
            % [p["name"] for p in profiles])
    heaviest = max(sorted(expected), key=lambda k: expected[k])
    c.check(profiles[doc["activeProfileIndex"]]["name"] == profile_name(exp, *heaviest),
            "active profile is the heaviest thread")

    stacks = {}
    for (pid, tid), total in expected.items():
        p = by_name.get(profile_name(exp, pid, tid))
        if not c.check(p is not None, "profile of %d/%d" % (pid, tid)):
            continue
        c.check(sum(p["weights"]) == total * INTERVAL_NS, "%s: %d samples" % (p["name"], total))
        for smp, w in zip(p["samples"], p["weights"]):
            key = (pid, tid, tuple(frames[i]["name"] for i in smp))
            stacks[key] = stacks.get(key, 0) + w // INTERVAL_NS
    if exp["stacks"] is not None:
        c.check(stacks == exp["stacks"], "stacks match the profile:\n  %r" % stacks)

    if name.startswith("mixed"):
        main = by_name[profile_name(exp, 4242, 4242)]
        names = [[frames[i]["name"] for i in s] for s in main["samples"]]
        w = [x // INTERVAL_NS for x in main["weights"]]
        if exp["timeline"]:
            # time order: slot k has blur, relu (k < 100), read (k < 50); the
            # last 600 blur samples merge into one
            c.check(len(names) == 150 + 100 + 1, "time order: %d samples" % len(names))
            c.check(names[0][-1] == "cv::hlineSmooth" and names[1][-1] == "relu" and names[2][-1] == "ksys_read",
                    "time order: first samples %r" % [n[-1] for n in names[:3]])
            c.check(w[-1] == 600 and names[-1][-1] == "cv::hlineSmooth", "time order: the last run merged")
        else:
            c.check([n[-1] for n in names] == ["cv::hlineSmooth", "relu", "ksys_read"] and w == [700, 100, 50],
                    "aggregated, in name order: %r %r" % ([n[-1] for n in names], w))
        fr = {f["name"]: f for f in frames}
        c.check(fr["Model.forward"] == {"name": "Model.forward", "file": "model.py", "line": 12},
                "Python frame: file and line")
        c.check(fr["read"] == {"name": "read", "file": "libc.so.6"}, "native frame without source: module")
        c.check(fr["cv::hlineSmooth"].get("file") == "smooth.simd.hpp" and fr["cv::hlineSmooth"].get("line") == 1200,
                "native frame with source: file and line")
    if name == "hostile":
        check_hostile_names(c, {f["name"] for f in frames})
    return c.done()


if __name__ == "__main__":
    sys.exit(checker_main(check_file))
