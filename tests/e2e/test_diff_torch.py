"""diff_torch: FP32 vs dynamically quantized INT8 inference, the comparison
`ember diff` exists for.

examples/python/torch_inference.py runs a small CNN whose time is in its
Linear layers, in FP32 or (--int8) with the Linear layers quantized.  Both
runs are recorded (499 Hz, so the smaller kernels get enough samples) and
compared; the delta table (CSV) must show:
- quantized kernels only in NEW: a native function named like a quantized
  or int8 op (quantize*, qlinear, fbgemm, qnnpack, s8x8s32/u8s8 GEMMs, qint8);
- the FP32 GEMM only in BASE: a native sgemm/addmm function;
- shared frames in both: the convolution (not quantized) in both runs;
- Python frames, when the profiles have them: TinyNet.forward in both runs,
  torch.nn's Linear.forward only in BASE (skipped loudly without Python frames);
and the SVG and pprof outputs are written.  Skipped (77) when torch is not
importable by /usr/bin/python3 or sampling is not permitted.
"""
import csv
import io
import os
import re
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "python", "torch_inference.py")

chk = E.Checker("e2e.diff_torch")
r = E.run([E.PYTHON, "-c", "import torch"], quiet=True)
if r.rc != 0:
    E.skip("torch is not importable by %s (apt-get install python3-torch)" % E.PYTHON)
if not os.path.exists(SCRIPT):
    E.skip("%s is missing" % SCRIPT)

d = E.tmpdir()
fp32, int8 = os.path.join(d, "fp32.ember"), os.path.join(d, "int8.ember")
for out, extra in ((fp32, []), (int8, ["--int8"])):
    res = E.record(["-q", "-F", "499", "-o", out], [E.PYTHON, SCRIPT, "--batches", "150"] + extra, timeout=100)
    if res.rc == 77:
        E.skip("sampling not permitted here")
    chk.check(res.rc == 0 and os.path.exists(out), "record %s exits 0" % os.path.basename(out), res.describe())
if chk.failures:
    chk.finish()

outs = {ext: os.path.join(d, "fp32-int8" + ext) for ext in (".csv", ".svg", ".pb.gz")}
res = E.run([E.ember(), "diff", fp32, int8, "--top", "15"] + sum([["-o", p] for p in outs.values()], []))
chk.check(res.rc == 0, "ember diff fp32.ember int8.ember exits 0", res.describe())
for ext, p in outs.items():
    chk.check(os.path.exists(p) and os.path.getsize(p) > 0, "%s written" % ext)

lines = open(outs[".csv"]).read().splitlines() if os.path.exists(outs[".csv"]) else []
rows = list(csv.DictReader(io.StringIO("\n".join(l for l in lines if not l.startswith("#")))))
python_frames = [r for r in rows if r["key"].endswith(".py)")]
native = [r for r in rows if not r["key"].endswith(".py)")]


def only_new(r):
    return int(r["incl_base_samples"]) == 0 and int(r["incl_new_samples"]) > 0


def only_base(r):
    return int(r["incl_base_samples"]) > 0 and int(r["incl_new_samples"]) == 0


def both(r):
    return int(r["incl_base_samples"]) > 0 and int(r["incl_new_samples"]) > 0


def show(rs):
    return "\n".join("%-8s %5s %5s  %s" % (r["status"], r["incl_base_samples"], r["incl_new_samples"], r["key"][:120])
                     for r in rs[:15])


# Import-time code objects are freed microseconds after they ran: a frame
# copied at the sample must not be named from the freed memory (it was:
# "<module> (module 'torch....' has no attribute '__path__')", "? (?)").
PYKEY = re.compile(r"^(.+) \(([^()]*)\)$")
garbled = [r["key"] for r in rows if PYKEY.match(r["key"]) and "::" not in r["key"] and
           (PYKEY.match(r["key"]).group(1).startswith("?") or
            not re.search(r"\.py$|^<.*>$", PYKEY.match(r["key"]).group(2)))]
chk.check(not garbled, "no garbled Python frame names or files: %s" % garbled[:5])

QUANT = re.compile(r"quantiz|qlinear|fbgemm|qnnp|s8x8s32|u8s8|qint8|quint8", re.I)
GEMM32 = re.compile(r"sgemm|addmm|gemm_f32|f32_gemm", re.I)
CONV = re.compile(r"convolution|conv2d", re.I)

q = [r for r in native if QUANT.search(r["key"])]
chk.check(any(only_new(r) and r["status"] == "new" for r in q),
          "a quantized kernel is only in NEW (status new)", show(q) or "(no native quantized frames)")
chk.check(not any(only_base(r) for r in q), "no quantized kernel only in BASE", show(q))
g = [r for r in native if GEMM32.search(r["key"])]
chk.check(any(only_base(r) and r["status"] == "removed" for r in g),
          "the FP32 GEMM (sgemm/addmm) is only in BASE (status removed)", show(g) or "(no FP32 GEMM frames)")
c = [r for r in native if CONV.search(r["key"])]
chk.check(any(both(r) and r["status"] == "changed" for r in c), "the (unquantized) convolution is in both runs", show(c))
chk.check(sum(1 for r in rows if both(r)) >= 20, "many keys are shared (%d)" % sum(1 for r in rows if both(r)))

if python_frames:
    fwd = [r for r in python_frames if r["key"].startswith("TinyNet.forward ")]
    chk.check(fwd and both(fwd[0]), "Python: TinyNet.forward is in both runs", show(fwd))
    lin = [r for r in python_frames if r["key"].startswith("Linear.forward (torch/nn/")]
    chk.check(lin and only_base(lin[0]), "Python: torch.nn Linear.forward only in BASE", show(lin))
else:
    print("SKIP (check): the profiles have no Python frames: the Python-frame assertions were not run", flush=True)

# the terminal table leads with the biggest inclusive changes, the GEMM among them
table = res.stdout
chk.check(re.search(r"removed\s+(noise\s+)?\S*(sgemm|addmm)", table) is not None,
          "the terminal table's top rows show the FP32 GEMM removed", table)
chk.finish()
