#!/usr/bin/env python3
"""Tiny CNN classifier inference in FP32 or dynamically quantized INT8.

Edge-lab style workload: a small convolutional front-end followed by a large
fully connected head, run on synthetic 1x64x64 "images".  The Linear layers
dominate the run time on purpose: dynamic quantization
(torch.quantization.quantize_dynamic) only converts nn.Linear / nn.LSTM, so a
conv-heavy model would look the same in FP32 and INT8.

    python3 torch_inference.py            # FP32
    python3 torch_inference.py --int8     # INT8 (dynamic quantization)

Profile and compare with ember:

    ember record -o out/fp32.ember -- python3 examples/python/torch_inference.py
    ember record -o out/int8.ember -- python3 examples/python/torch_inference.py --int8
    ember diff out/fp32.ember out/int8.ember -o out/fp32-vs-int8.svg

Only the standard library and torch are needed; no weights are downloaded
(the weights are random with a fixed seed).
"""

import argparse
import os
import platform
import statistics
import time

# Debian's torch runs its own ops on libgomp threads but fp32 GEMMs on
# OpenBLAS's separate pthread pool.  With libgomp's default spin-waiting the
# two pools fight over the cores (badly so on a busy 2-core board), and the
# profile fills up with libgomp spin loops.  Idle OpenMP threads sleep instead
# unless you override it, e.g. OMP_WAIT_POLICY=ACTIVE to see the spinning.
# Must be set before torch (and so libgomp) is loaded.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn as nn


class TinyNet(nn.Module):
    """Conv front-end (cheap) + big Linear head (expensive, quantizable)."""

    def __init__(self, num_classes=10, hidden=1024):
        super().__init__()
        # 1x64x64 -> 8x32x32 -> 16x16x16 (stride-2 convs keep this part small)
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.fc1 = nn.Linear(16 * 16 * 16, hidden)  # 4096 -> hidden
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, num_classes)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.features(x)            # N x 16 x 16 x 16
        x = torch.flatten(x, 1)         # N x 4096
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.relu(self.fc3(x))
        return self.head(x)


def pick_engine(requested=None):
    """Choose a quantized engine: fbgemm on x86, qnnpack on ARM, else fallback."""
    supported = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    machine = platform.machine().lower()
    if requested:
        order = [requested]
    elif machine in ("x86_64", "amd64", "i686", "i386"):
        # Debian's torch is built without FBGEMM; oneDNN is its x86 int8 backend.
        order = ["fbgemm", "x86", "onednn", "qnnpack"]
    else:  # aarch64 / armv7l (Raspberry Pi, Jetson)
        order = ["qnnpack", "onednn", "fbgemm"]
    for engine in order:
        if engine in supported:
            try:
                torch.backends.quantized.engine = engine
                return engine
            except RuntimeError:
                continue
    raise SystemExit(f"no usable quantized engine (wanted {order}, "
                     f"torch supports {supported})")


def quantize_int8(model, engine):
    qmodel = torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    if engine == "qnnpack":
        # Dynamic Linear (module version 4) always passes reduce_range=True,
        # which QNNPACK ignores anyway but warns about on *every* call via
        # glog.  Version 3 calls the same kernel without the flag: same maths,
        # no log spam.
        for m in qmodel.modules():
            if m._get_name() == "DynamicQuantizedLinear" and getattr(m, "version", 0) == 4:
                m.version = 3
    return qmodel


def make_batches(n, batch_size, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(batch_size, 1, 64, 64, generator=g) for _ in range(n)]


def run_inference(model, batches, warmup):
    latencies = []
    checksum = 0.0
    with torch.no_grad():
        for i, x in enumerate(batches):
            t0 = time.perf_counter()
            logits = model(x)
            dt = time.perf_counter() - t0
            if i >= warmup:
                latencies.append(dt)
            checksum += float(logits.argmax(dim=1).sum())
    return latencies, checksum


def percentile(values, p):
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100.0 * (len(s) - 1))))
    return s[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--int8", action="store_true",
                    help="dynamically quantize the Linear layers to INT8")
    ap.add_argument("--batches", type=int, default=100, help="timed batches (default 100)")
    ap.add_argument("--batch-size", type=int, default=32, help="default 32")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--hidden", type=int, default=1024, help="Linear width (default 1024)")
    ap.add_argument("--engine", default=None,
                    help="quantized engine override (fbgemm, x86, onednn, qnnpack)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed warm-up batches")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    model = TinyNet(hidden=args.hidden).eval()
    mode = "fp32"
    engine = "-"
    if args.int8:
        engine = pick_engine(args.engine)
        model = quantize_int8(model, engine)
        mode = "int8"

    batches = make_batches(args.batches + args.warmup, args.batch_size, args.seed + 1)

    t0, c0 = time.perf_counter(), time.process_time()
    lat, checksum = run_inference(model, batches, args.warmup)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0

    ms = [v * 1e3 for v in lat]
    imgs = len(lat) * args.batch_size
    print(f"mode={mode} engine={engine} torch={torch.__version__} "
          f"threads={torch.get_num_threads()} batch_size={args.batch_size} "
          f"batches={len(lat)} (+{args.warmup} warm-up) "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(f"latency/batch: mean {statistics.fmean(ms):.2f} ms  "
          f"p95 {percentile(ms, 95):.2f} ms  min {min(ms):.2f} ms")
    print(f"throughput: {imgs / (sum(lat) or 1e-9):.0f} img/s  "
          f"loop wall {wall:.2f} s  cpu {cpu:.2f} s  checksum {checksum:.0f}")


if __name__ == "__main__":
    main()
