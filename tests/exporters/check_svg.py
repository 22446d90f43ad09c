#!/usr/bin/env python3
"""Validate an SVG flame graph written by ember (exporters/svg.c).

Checks that the file is well-formed XML, that every child of <g id="frames">
is a frame as the embedded script expects (<g s= n=> with <title> first,
then <rect>, then <text>), that geometry matches the sample counts, that
children nest inside their parents and are never wider, that no frame is
narrower than --min-width pixels, and that the only URLs are the SVG and
XLink namespaces.  Prints "frames=N max_depth=D total=T" and exits 0, or
prints the problems and exits 1.  Standard library only.

usage: check_svg.py FILE.svg [--total N] [--min-width PX] [--icicle]
"""
import argparse
import re
import sys
import xml.dom.minidom

XPAD = 10
FRAME_H = 16
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def elements(node):
    return [c for c in node.childNodes if c.nodeType == c.ELEMENT_NODE]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("--total", type=int)
    ap.add_argument("--min-width", type=float, default=0.1)
    ap.add_argument("--icicle", action="store_true")
    args = ap.parse_args()

    raw = open(args.svg, "rb").read()
    problems = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print(f"not UTF-8: {e}")
        return 1
    for url in re.findall(r"https?://[^\s\"'<>)]*", text):
        if url not in NAMESPACES:
            problems.append(f"URL in the file: {url}")
    for m in re.finditer(r"[\x00-\x08\x0b-\x1f\x7f]", text):
        problems.append(f"control character {m.group()!r} at {m.start()}")
        break
    try:
        doc = xml.dom.minidom.parseString(raw)
    except Exception as e:  # ExpatError and friends
        print(f"not well-formed XML: {e}")
        return 1

    svg = doc.documentElement
    if svg.tagName != "svg":
        problems.append(f"root element is {svg.tagName}")
    width = float(svg.getAttribute("width"))
    frames_el = [g for g in doc.getElementsByTagName("g") if g.getAttribute("id") == "frames"]
    if len(frames_el) != 1:
        print("no single <g id=\"frames\">")
        return 1

    frames = []
    for i, g in enumerate(elements(frames_el[0])):
        kids = elements(g)
        if g.tagName != "g" or len(kids) != 3 or [k.tagName for k in kids] != ["title", "rect", "text"]:
            problems.append(f"frame {i}: expected <g><title/><rect/><text/></g>, got "
                            f"<{g.tagName}> with {[k.tagName for k in kids]}")
            continue
        title, rect, _ = kids
        f = {
            "i": i,
            "s": int(g.getAttribute("s")),
            "n": int(g.getAttribute("n")),
            "x": float(rect.getAttribute("x")),
            "y": float(rect.getAttribute("y")),
            "w": float(rect.getAttribute("width")),
            "title": "".join(c.data for c in title.childNodes if c.nodeType == c.TEXT_NODE),
        }
        # the numbers end the first line; a note may follow on a line of its own
        if not re.search(r" \([\d,]+ samples, \d+\.\d\d%\)(\n[^\n(]+)?$", f["title"]):
            problems.append(f"frame {i}: tooltip without samples and %: {f['title']!r}")
        frames.append(f)

    if not frames:
        if args.total:
            problems.append(f"no frames, expected a total of {args.total}")
        for p in problems:
            print(p)
        print("frames=0 max_depth=0 total=0")
        return 1 if problems else 0

    root = frames[0]
    total = root["n"]
    if root["s"] != 0 or not root["title"].startswith("all ("):
        problems.append("the first frame is not the root 'all'")
    if args.total is not None and total != args.total:
        problems.append(f"root spans {total} samples, expected {args.total}")
    scale = (width - 2 * XPAD) / total if total else 0
    if abs(root["w"] - (width - 2 * XPAD)) > 0.051:
        problems.append(f"root width {root['w']} != {width - 2 * XPAD}")

    for f in frames:
        if args.icicle:
            f["depth"] = round((f["y"] - root["y"]) / FRAME_H)
        else:
            f["depth"] = round((root["y"] - f["y"]) / FRAME_H)
        if abs(f["x"] - (XPAD + f["s"] * scale)) > 0.051 or abs(f["w"] - f["n"] * scale) > 0.051:
            problems.append(f"frame {f['i']}: rect x={f['x']} width={f['w']} do not match s={f['s']} n={f['n']}")
        if f["n"] * scale < args.min_width:
            problems.append(f"frame {f['i']} ({f['title']}): {f['n'] * scale:.3f} px wide, "
                            f"under the minimum {args.min_width}")

    # parents: the frame one level closer to the root whose range holds this one
    by_depth = {}
    for f in frames:
        by_depth.setdefault(f["depth"], []).append(f)
    for d, row in by_depth.items():
        row.sort(key=lambda f: f["s"])
        for a, b in zip(row, row[1:]):
            if a["s"] + a["n"] > b["s"]:
                problems.append(f"frames {a['i']} and {b['i']} overlap at depth {d}")
    children = {}
    for f in frames[1:]:
        parents = [p for p in by_depth.get(f["depth"] - 1, [])
                   if p["s"] <= f["s"] and f["s"] + f["n"] <= p["s"] + p["n"]]
        if len(parents) != 1:
            problems.append(f"frame {f['i']} ({f['title']}) has {len(parents)} parents")
            continue
        p = parents[0]
        children.setdefault(p["i"], []).append(f)
        if f["w"] > p["w"] + 0.051 or f["n"] > p["n"]:
            problems.append(f"frame {f['i']} is wider than its parent {p['i']}")
    for pi, kids in children.items():
        if sum(k["n"] for k in kids) > frames[pi]["n"]:
            problems.append(f"children of frame {pi} add up to more than it")

    for p in problems[:20]:
        print(p)
    max_depth = max(f["depth"] for f in frames)
    print(f"frames={len(frames)} max_depth={max_depth} total={total}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
