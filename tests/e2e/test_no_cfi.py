"""no_cfi: `ember record -- no_cfi MODE 1.5`, code without CFI where the
time goes (tests/targets/no_cfi.c has each mode's known chain).

- entry: a leaf caught with its return address still at [SP] (a library's
  `.init`, a PLT stub without unwind info);
- kernel: a BLAS-style leaf (saved registers, SP kept in rbx, a 28-32 KB
  buffer: OpenBLAS's Haswell DGEMM kernel), reached through a function
  pointer, with stale return addresses of finished deep calls in its buffer;
- callback: a non-leaf without CFI calling back into C.

Each must keep its callers: >= 99% of the hot function's samples carry the
whole chain from main, none has a wrong caller, the frame without CFI is
marked in the .ember file and the SVG tooltip, and the summary counts the
samples that passed it and were recovered.  libunwind alone ends these
stacks at the leaf or one frame after it.
"""
import os
import platform
import re
import subprocess
import emberlib as E

if platform.machine() != "x86_64":
    E.skip("no_cfi's functions are x86_64 assembly")
chk = E.Checker("e2e.no_cfi")
d = E.tmpdir()

MODES = {
    "entry": (("main", "outer", "spin_no_cfi"), "spin_no_cfi"),
    "kernel": (("main", "outer_kernel", "blas_kernel_no_cfi"), "blas_kernel_no_cfi"),
    "callback": (("main", "outer_callback", "each_no_cfi", "spin_callback"), "spin_callback"),
}
SCANNED_NOTE = "no unwind info here: its caller was found by scanning the stack"
LIBC_START = ("_start", "__libc_start_main", "__libc_start_call_main")

for mode, (chain, hot) in MODES.items():
    folded, ember_file = os.path.join(d, mode + ".folded"), os.path.join(d, mode + ".ember")
    res = E.record(["-o", folded, "-o", ember_file], [E.target("no_cfi"), mode, "1.5"])
    chk.check(res.rc == 0, "%s: ember exits 0" % mode, res.describe())
    prof = E.load_profile(chk, folded, res)
    if not prof.total:
        continue
    hot_samples = prof.count(lambda f: f[-1] == hot)
    # the whole stack: the libc start frames, then the chain down to the leaf
    good = prof.count(lambda f: f[-len(chain):] == chain and all(fr in LIBC_START for fr in f[:-len(chain)])
                      and f[0] == "_start")
    # the hot function under anything but its own chain, unless the stack
    # says it is incomplete ([truncated], or only the leaf: an unwind failure)
    wrong = prof.count(lambda f: f[-1] == hot and f[-len(chain):] != chain and len(f) > 1 and
                       not f[0].startswith("["))
    chk.check(hot_samples >= 50 and good >= 0.99 * hot_samples,
              "%s: _start..%s in >= 99%% of %s's samples: %d of %d" % (mode, ";".join(chain), hot, good,
                                                                        hot_samples), prof.top())
    chk.check(wrong == 0, "%s: no sample puts %s under a wrong caller (%d)" % (mode, hot, wrong), prof.top())
    m = re.search(r"(\d+) samples passed a frame without unwind info \(hand-written assembly, JIT code\); "
                  r"(\d+) recovered by stack scan \(([0-9.]+) us a scan\)", res.stderr)
    chk.check(m and int(m.group(1)) >= hot_samples * 0.9 and int(m.group(2)) >= 0.99 * int(m.group(1)),
              "%s: the summary counts the samples that passed the frame without CFI, and recovered" % mode,
              res.stderr)
    # The mark survives .ember -> SVG.
    svg = os.path.join(d, mode + ".svg")
    conv = E.run([E.ember(), "convert", ember_file, "-o", svg])
    text = open(svg, encoding="utf-8").read() if conv.rc == 0 and os.path.exists(svg) else ""
    marked = chain[-1] if mode != "callback" else "each_no_cfi"
    titles = re.findall(r"<title>%s \([^<]*</title>" % re.escape(marked), text)
    chk.check(titles and all(SCANNED_NOTE in t for t in titles),
              "%s: the SVG tooltip of %s says its caller was found by a stack scan" % (mode, marked),
              "\n".join(titles[:3]) or conv.describe())
    clean = [t for t in re.findall(r"<title>([^<]*)</title>", text) if SCANNED_NOTE in t]
    chk.check(all(t.startswith(marked + " (") for t in clean),
              "%s: no other frame is marked (%s)" % (mode, sorted({t.split(" (")[0] for t in clean})))

# A stack with CFI all the way is never scanned (the chain target).
res = E.record(["-o", os.path.join(d, "chain.folded")], [E.target("chain"), "1"])
chk.check(res.rc == 0 and "without unwind info" not in res.stderr,
          "a program with CFI everywhere: no sample passed a frame without unwind info", res.describe())
chk.finish()
