"""C++: `ember record -- cxx_ns 1.5`; vision::Filter::apply(int) burns CPU.
- the demangled name `vision::Filter::apply` (with or without `(int)`) is a
  frame, directly under main, in >= 90% of samples;
- no mangled `_Z...` frame name in those stacks (nor anywhere)."""
import os
import emberlib as E

chk = E.Checker("e2e.cxx_demangle")
out = os.path.join(E.tmpdir(), "cxx.folded")
res = E.record(["-o", out], [E.target("cxx_ns"), "1.5"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)
E.check_format(chk, prof)

def is_apply(fr):
    return fr == "vision::Filter::apply" or fr.startswith("vision::Filter::apply(")

names = sorted({fr for fr in prof.frames() if "apply" in fr or "Filter" in fr})
chk.check(any(is_apply(fr) for fr in names), "demangled vision::Filter::apply present (saw %s)" % names,
          prof.top())

def main_apply(f):
    return any(f[i] == "main" and is_apply(f[i + 1]) for i in range(len(f) - 1))

total = prof.total
n = prof.count(main_apply)
chk.check(total > 0 and n >= 0.9 * total, "main;vision::Filter::apply in >= 90%% of samples: %d of %d"
          % (n, total), prof.top())
mangled_hot = sorted({fr for f, _ in prof.stacks if any(map(is_apply, f)) for fr in f if fr.startswith("_Z")})
chk.check(not mangled_hot, "no mangled _Z names in the hot path", "\n".join(mangled_hot))
mangled = sorted({fr for fr in prof.frames() if fr.startswith("_Z")})
chk.check(not mangled, "no mangled _Z names anywhere", "\n".join(mangled[:10]))
chk.finish()
