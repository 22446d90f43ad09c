#!/usr/bin/env python3
"""OpenCV edge-detection pipeline on synthetic camera frames.

Edge-lab style workload: frames (BGR, default 640x480) with moving shapes and
sensor noise go through resize -> grayscale -> Gaussian blur -> Canny -> a
little post-processing.  Each stage is its own small Python function so a
profiler can attribute the native OpenCV time to the Python caller that asked
for it (resize_step, gray_step, blur_step, edges_step, contours_step).

    python3 opencv_pipeline.py --frames 300 --size 640x480 --threads 2

Needs only numpy and cv2 (python3-opencv); no camera, files or network.
"""

import argparse
import statistics
import time

import cv2
import numpy as np


def make_frames(n_distinct, width, height, seed):
    """Pre-render a pool of synthetic frames: gradient background, moving
    circles/rectangles/lines and Gaussian sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    background = np.dstack([
        (xx * 255 // max(width - 1, 1)),
        (yy * 255 // max(height - 1, 1)),
        ((xx + yy) * 127 // max(width + height - 2, 1)),
    ]).astype(np.uint8)

    shapes = []
    for _ in range(12):
        shapes.append({
            "kind": rng.choice(["circle", "rect", "line"]),
            "pos": rng.uniform([0, 0], [width, height]),
            "vel": rng.uniform(-6, 6, size=2),
            "size": rng.uniform(10, min(width, height) / 6),
            "color": tuple(int(c) for c in rng.integers(0, 256, size=3)),
        })

    # A few sensor-noise fields, reused round-robin (drawing fresh Gaussian
    # noise for every frame would cost more than the pipeline itself).
    noise_pool = [rng.normal(0, 8, size=(height, width, 3)).astype(np.int16)
                  for _ in range(3)]

    frames = []
    for _ in range(n_distinct):
        frame = background.copy()
        for s in shapes:
            s["pos"] = (s["pos"] + s["vel"]) % (width, height)
            x, y = (int(v) for v in s["pos"])
            r = int(s["size"])
            if s["kind"] == "circle":
                cv2.circle(frame, (x, y), r, s["color"], -1, cv2.LINE_AA)
            elif s["kind"] == "rect":
                cv2.rectangle(frame, (x - r, y - r // 2), (x + r, y + r // 2), s["color"], -1)
            else:
                cv2.line(frame, (x - r, y - r), (x + r, y + r), s["color"], 3, cv2.LINE_AA)
        noise = noise_pool[len(frames) % len(noise_pool)]
        frames.append(np.clip(frame + noise, 0, 255).astype(np.uint8))
    return frames


def resize_step(frame, out_size):
    # Resample to the processing resolution (default: 2x, 640x480 -> 1280x960,
    # so the native stages, not the Python glue, dominate the profile).
    return cv2.resize(frame, out_size, interpolation=cv2.INTER_LINEAR)


def gray_step(frame):
    return cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)


def blur_step(gray):
    return cv2.GaussianBlur(gray, (7, 7), 1.5)


def edges_step(blurred):
    return cv2.Canny(blurred, 50, 150)


def contours_step(edges):
    edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    found = cv2.findContours(edges, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    contours = found[0] if len(found) == 2 else found[1]  # cv2 3.x vs 4.x
    return len(contours)


def process_frame(frame, out_size):
    big = resize_step(frame, out_size)
    gray = gray_step(big)
    blurred = blur_step(gray)
    edges = edges_step(blurred)
    n_objects = contours_step(edges)
    return edges, n_objects


def run_pipeline(frames, n_frames, out_size):
    latencies = []
    edge_pixels = 0
    objects = 0
    for i in range(n_frames):
        t0 = time.perf_counter()
        edges, n_obj = process_frame(frames[i % len(frames)], out_size)
        latencies.append(time.perf_counter() - t0)
        edge_pixels += int(cv2.countNonZero(edges))
        objects += n_obj
    return latencies, edge_pixels, objects


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100.0 * (len(s) - 1))))]


def parse_size(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if w <= 0 or h <= 0:
            raise ValueError
        return w, h
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WxH, e.g. 640x480, got {text!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=150, help="frames to process (default 150)")
    ap.add_argument("--size", type=parse_size, default=(640, 480),
                    help="input frame size WxH (default 640x480)")
    ap.add_argument("--scale", type=float, default=2.0,
                    help="resize factor applied by resize_step (default 2.0)")
    ap.add_argument("--threads", type=int, default=None,
                    help="cv2.setNumThreads(N) (default: leave OpenCV's default; "
                         "0 = run sequentially)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.threads is not None:
        cv2.setNumThreads(args.threads)
    width, height = args.size
    out_size = (max(1, int(width * args.scale)), max(1, int(height * args.scale)))

    t0 = time.perf_counter()
    frames = make_frames(min(args.frames, 30), width, height, args.seed)
    gen_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    lat, edge_pixels, objects = run_pipeline(frames, args.frames, out_size)
    wall = time.perf_counter() - t0

    ms = [v * 1e3 for v in lat]
    requested = "default" if args.threads is None else args.threads
    print(f"opencv {cv2.__version__}  threads={requested} (getNumThreads={cv2.getNumThreads()})  "
          f"frames={len(lat)}  {width}x{height} -> {out_size[0]}x{out_size[1]}  "
          f"(frame synthesis {gen_s:.2f} s)")
    print(f"latency/frame: mean {statistics.fmean(ms):.2f} ms  p95 {percentile(ms, 95):.2f} ms  "
          f"p99 {percentile(ms, 99):.2f} ms  max {max(ms):.2f} ms")
    print(f"throughput: {len(lat) / wall:.1f} FPS  loop wall {wall:.2f} s  "
          f"edge px/frame {edge_pixels / len(lat):.0f}  objects/frame {objects / len(lat):.1f}")


if __name__ == "__main__":
    main()
