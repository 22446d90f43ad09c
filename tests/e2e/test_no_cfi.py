"""no_cfi: `ember record -- no_cfi 1.5` (main -> outer -> spin_no_cfi, the
last hand-written without CFI and never touching the stack).

A leaf without CFI caught where its return address is still at [SP] (a
library's `.init` as the dynamic loader enters it, a PLT without unwind
info) must keep its callers: >= 90% of samples are main;outer;spin_no_cfi.
Before ember read the return address there, libunwind's frame-pointer
fallback ended those stacks at the leaf (during `import cv2`, 2-8 samples
per run lost their Python frames so).
"""
import os
import platform
import emberlib as E

if platform.machine() != "x86_64":
    E.skip("no_cfi's spin is x86_64 assembly")
chk = E.Checker("e2e.no_cfi")
out = os.path.join(E.tmpdir(), "no_cfi.folded")
res = E.record(["-o", out], [E.target("no_cfi"), "1.5"])
chk.check(res.rc == 0, "ember exits 0", res.describe())
prof = E.load_profile(chk, out, res)
total = prof.total
good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "outer", "spin_no_cfi")))
alone = prof.count(lambda f: f[0] == "spin_no_cfi")
chk.check(total >= 50 and good >= 0.9 * total,
          "main;outer;spin_no_cfi in >= 90%% of samples: %d of %d (%d with spin_no_cfi as the root)"
          % (good, total, alone), prof.top())
chk.finish()
