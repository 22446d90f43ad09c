"""diff_torch: FP32 vs dynamically quantized INT8 inference, the comparison
`ember diff` exists for.

usage: test_diff_torch.py --ember E --targets T [--python EXE]
EXE (default /usr/bin/python3: Debian 12's torch 1.13 with OpenBLAS; the
sid-big variant passes the wrapper that runs the Debian sid root's
python3.14 with torch 2.14, docs/sid.md) runs
examples/python/torch_inference.py: a small CNN whose time is in its Linear
layers, in FP32 or (--int8, torch.ao.quantization.quantize_dynamic) with the
Linear layers quantized, on one thread.  The environment that decides
threads and kernels is the test's own: OPENBLAS_NUM_THREADS=1,
OMP_NUM_THREADS=1, torch.set_num_threads(1) (--threads 1), and no inherited
OPENBLAS_*, GOTO*, OMP_*, GOMP_*, KMP_*, MKL_*, ONEDNN_*, DNNL_*, TORCH_* or
ATEN_CPU_CAPABILITY (ember sets DNNL_JIT_PROFILE and ONEDNN_JIT_PROFILE
itself), so every kernel runs under its Python caller.  Both runs are
recorded (499 Hz, so the smaller kernels get enough samples).

What runs the Linear layers depends on the build, and a probe says which
BLAS torch loaded:
- FP32: torch's addmm calls the BLAS sgemm_: OpenBLAS (Debian 12: its
  sgemm kernels) or the reference BLAS of libblas3 (sid: sgemm_ itself does
  the multiplication, 20 times slower; the FP32 run then does 12 batches,
  not 300, and the INT8 run 600, so that both take a few seconds);
- INT8: the onednn engine (neither build has FBGEMM): oneDNN's JIT GEMM
  kernels, which have no CFI and no symbol (torch 1.13 with oneDNN 2.6:
  the s8u8s32 GEMM kernels; torch 2.14 with oneDNN 3.12: the brgemm
  kernels, jit_brgemm_amx_uker_base_t on a CPU with AMX, else
  jit_brgemm_kernel_t and its VNNI kin).  ember names them from the perf
  map it had oneDNN write.
Checked:
- INT8: >= 95% of the inference loop's samples have a named leaf (a function,
  a JIT kernel named by the perf map ember had oneDNN write, or a stripped
  library's [module+0x...]: never [jit] or [unknown]) and certain Python
  frames; the quantized GEMM's JIT kernels (jit_*gemm*/gemv) are named and
  >= 95% of their samples sit under the quantized Linear.forward; the perf
  map is read and deleted;
- FP32: the SGEMM's samples (a leaf named *sgemm*) under torch.nn's
  Linear.forward (>= 95%);
- INT8 again with --no-jit-env: the kernels are [jit], no perf map is written.
Then compared; the delta table (CSV) must show:
- quantized kernels only in NEW: a native function named like a quantized
  or int8 op (quantize*, qlinear, fbgemm, qnnpack, s8x8s32/u8s8 GEMMs, qint8);
- the FP32 GEMM only in BASE: a native sgemm/addmm function;
- shared frames in both: the convolution (not quantized) in both runs;
- Python frames, when the profiles have them: TinyNet.forward in both runs,
  torch.nn's Linear.forward only in BASE (skipped loudly without Python frames);
and the SVG and pprof outputs are written.  Then both again on two threads
(OPENBLAS_NUM_THREADS and OMP_NUM_THREADS 2, --threads 2): the quantized
GEMM's kernels, the pools' threads' samples among them, under the quantized
Linear.forward (>= 90%), the FP32 SGEMM's under torch.nn's, and the diff
has the quantized kernels only in NEW.  Skipped (77) when torch is not
importable by EXE or sampling is not permitted.
"""
import csv
import io
import os
import re
import time
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "python", "torch_inference.py")
PY = E.python_arg(E.PYTHON)

chk = E.Checker("e2e.diff_torch" if PY == E.PYTHON else "e2e.diff_torch (%s)" % PY)
if not os.path.exists(SCRIPT):
    E.skip("%s is missing" % SCRIPT)
STRIP = ("OPENBLAS_", "GOTO", "OMP_", "GOMP_", "KMP_", "MKL_", "ONEDNN_", "DNNL_", "TORCH_", "ATEN_CPU_CAPABILITY")
env = {k: v for k, v in os.environ.items() if not k.startswith(STRIP)}
env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
# Which BLAS torch loaded (its own matrix product pulls it in): the real path
# names the build behind libblas.so.3.
blas, r = E.mapped_after(PY, "import torch; print('TORCH', torch.__version__, "
                         "','.join(torch.backends.quantized.supported_engines)); "
                         "(torch.ones(64, 64) @ torch.ones(64, 64)).sum()", "blas", env=env)
if r.rc != 0:
    E.skip("torch is not importable by %s (apt-get install python3-torch): %s" % (PY, r.stderr.strip()[-300:]))
print("probe: %s" % "; ".join(r.stdout.splitlines()), flush=True)
kind = E.blas_kind(blas)
batches = {"fp32": 12, "int8": 600} if kind == "reference" else {"fp32": 300, "int8": 300}
print("torch's BLAS: %s (%s): %d FP32 batches, %d INT8 batches" %
      ({"openblas": "OpenBLAS", "reference": "the reference BLAS, libblas3"}.get(kind, "another"),
       ", ".join(blas) or "no BLAS library mapped", batches["fp32"], batches["int8"]), flush=True)



def map_left(res, since):
    """Whether the recorded process's /tmp/perf-PID.map exists and was
    written after `since` (a map of an earlier process of the same pid,
    left in /tmp by something else, is not this run's)."""
    pid = re.search(r"ember: pid (\d+): Python", res.stderr)
    path = "/tmp/perf-%s.map" % pid.group(1) if pid else None
    return path is not None and os.path.exists(path) and os.stat(path).st_mtime >= since


d = E.tmpdir()
fp32, int8 = os.path.join(d, "fp32.ember"), os.path.join(d, "int8.ember")
runs, started = {}, {}
for out, mode, extra in ((fp32, "fp32", []), (int8, "int8", ["--int8"])):
    started[out] = time.time()
    res = E.record(["-F", "499", "-o", out], [PY, SCRIPT, "--batches", str(batches[mode]), "--threads", "1"] + extra,
                   env=env, timeout=100)
    if res.rc == 77:
        E.skip("sampling not permitted here")
    chk.check(res.rc == 0 and os.path.exists(out), "record %s exits 0" % os.path.basename(out), res.describe())
    runs[out] = res
if chk.failures:
    chk.finish()


def folded(ember_file):
    out = ember_file + ".folded"
    r = E.run([E.ember(), "convert", "--threads", ember_file, "-o", out], quiet=True)
    chk.check(r.rc == 0, "convert %s to folded stacks" % os.path.basename(ember_file), r.describe())
    return E.load_profile(chk, out, r)


def loop_samples(prof):
    return [(f, c) for f, c in prof.stacks if f[0].startswith("MainThread (") and
            any(x.startswith("run_inference (") for x in f)]


JIT_GEMM = re.compile(r"^_?jit_\w*(gemm|gemv)")
QLINEAR = "Linear.forward (torch/ao/nn/quantized/dynamic/modules/linear.py:"
LINEAR = "Linear.forward (torch/nn/modules/linear.py:"

p8 = folded(int8)
loop = loop_samples(p8)
total = sum(c for _, c in loop)
named = sum(c for f, c in loop if f[-1] not in ("[jit]", "[unknown]") and not f[-1].startswith("[anon:") and
            "[python frames uncertain]" not in f and f[1] != "[truncated]")
chk.check(total >= 200 and named >= 0.95 * total, "INT8: the inference loop's samples have a named leaf and "
          "certain Python frames: %d of %d" % (named, total), p8.top(15))
qk = [(f, c) for f, c in loop if JIT_GEMM.match(f[-1])]
qtot = sum(c for _, c in qk)
qgood = sum(c for f, c in qk if any(x.startswith(QLINEAR) for x in f))
chk.check(qtot >= 20 and qgood >= 0.95 * qtot, "INT8: the quantized GEMM's JIT kernels (%s) under the quantized "
          "Linear.forward: %d of %d" % (sorted({f[-1] for f, _ in qk}), qgood, qtot), p8.top(15))
r8 = runs[int8]
pid8 = re.search(r"ember: pid (\d+): Python", r8.stderr)
chk.check(re.search(r"JIT code named from \d+ perf map.*the perf maps ember asked for were deleted", r8.stderr)
          and pid8 and not map_left(r8, started[int8]),
          "INT8: oneDNN's perf map read, then deleted", r8.stderr)

p32 = folded(fp32)
sg = [(f, c) for f, c in loop_samples(p32) if "sgemm" in f[-1]]
sgtot = sum(c for _, c in sg)
sggood = sum(c for f, c in sg if any(x.startswith(LINEAR) for x in f))
chk.check(sgtot >= 50 and sggood >= 0.95 * sgtot, "FP32: the SGEMM's samples (%s) under torch.nn's "
          "Linear.forward: %d of %d" % (sorted({f[-1] for f, _ in sg}), sggood, sgtot), p32.top(15))
if kind == "reference":
    # (the reference sgemm_ multiplies in its own loops: no kernel below it)
    chk.check(sum(c for f, c in sg if f[-1] == "sgemm_") >= 0.95 * sgtot,
              "FP32, reference BLAS: sgemm_ itself is the leaf", p32.top(15))

plain = os.path.join(d, "int8-noenv.ember")
started_plain = time.time()
res = E.record(["-F", "499", "--no-jit-env", "-o", plain],
               [PY, SCRIPT, "--batches", "100", "--threads", "1", "--int8"], env=env, timeout=100)
pidn = re.search(r"ember: pid (\d+): Python", res.stderr)
pn = folded(plain)
chk.check(res.rc == 0 and "JIT code named" not in res.stderr and pidn and
          not map_left(res, started_plain) and
          not any(JIT_GEMM.match(x) for x in pn.frames()) and pn.count(lambda f: f[-1] == "[jit]") > 0,
          "--no-jit-env: no perf map written, the JIT kernels stay [jit]", res.describe() + "\n" + pn.top(8))

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

jq = [r for r in native if JIT_GEMM.match(r["key"])]
chk.check(jq and all(only_new(r) for r in jq), "the quantized GEMM's JIT kernels are only in NEW", show(jq))
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

# Two threads, as torch runs by default on a multi-core board: the kernels
# that ran on the pools' threads (OpenMP's, OpenBLAS's) go under the Linear
# layer that dispatched them too (docs/pools.md).
env2 = dict(env, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
two = {}
for mode, extra in (("fp32", []), ("int8", ["--int8"])):
    out = os.path.join(d, "%s-2.ember" % mode)
    res = E.record(["-F", "499", "-o", out], [PY, SCRIPT, "--batches", str(batches[mode]), "--threads", "2"] + extra,
                   env=env2, timeout=100)
    chk.check(res.rc == 0, "record %s with two threads exits 0" % mode, res.describe())
    two[mode] = folded(out) if res.rc == 0 else None
if two["int8"] and two["fp32"]:
    def under_caller(prof, is_kernel, caller, least, what):
        """The kernel's samples, every thread's, under the Python caller, some on a pool's thread."""
        ks = [(f, c) for f, c in prof.stacks if is_kernel(f[-1])]
        tot = sum(c for _, c in ks)
        good = sum(c for f, c in ks if any(x.startswith(caller) for x in f))
        worker = sum(c for f, c in ks if not f[0].startswith("MainThread ("))
        chk.check(tot >= least and good >= 0.9 * tot and worker > 0,
                  "%s: %d of %d, %d of them on a pool's thread" % (what, good, tot, worker), prof.top(15))

    under_caller(two["int8"], JIT_GEMM.match, QLINEAR, 20,
                 "INT8, two threads: the quantized GEMM's kernels under the quantized Linear.forward")
    under_caller(two["fp32"], lambda leaf: "sgemm" in leaf, LINEAR, 50,
                 "FP32, two threads: the SGEMM's samples under torch.nn's Linear.forward")
    csv2 = os.path.join(d, "two.csv")
    res = E.run([E.ember(), "diff", os.path.join(d, "fp32-2.ember"), os.path.join(d, "int8-2.ember"), "-o", csv2])
    lines = open(csv2).read().splitlines() if os.path.exists(csv2) else []
    rows2 = list(csv.DictReader(io.StringIO("\n".join(lines))))
    jq2 = [r for r in rows2 if JIT_GEMM.match(r["key"])]
    chk.check(res.rc == 0 and jq2 and all(only_new(r) for r in jq2),
              "two threads: diff has the quantized GEMM's JIT kernels only in NEW", show(jq2) or res.describe())
chk.finish()
