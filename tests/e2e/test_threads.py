"""threads: `ember record --threads -- threads 1.5`.
- every root frame is `name (tid)`;
- roots `worker-alpha (ALPHA_TID)` and `worker-beta (BETA_TID)` exist, with
  the tids the target printed, each with >= 15 samples;
- alpha_burn only under worker-alpha, beta_burn only under worker-beta;
- alpha_burn in >= 90% of worker-alpha's samples, beta_burn likewise."""
import os
import emberlib as E

chk = E.Checker("e2e.threads")
out = os.path.join(E.tmpdir(), "threads.folded")
res = E.record(["--threads", "-o", out], [E.target("threads"), "1.5"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)
E.check_format(chk, prof)

roots = prof.by_root()
bad_roots = [r for r in roots if E.thread_root(r) is None]
chk.check(not bad_roots, "every root frame is `name (tid)` with --threads", "\n".join(bad_roots[:10]))
tids = {"alpha": E.stdout_value(res, "alpha_tid", int), "beta": E.stdout_value(res, "beta_tid", int)}
chk.check(None not in tids.values(), "target printed its thread ids %s" % tids, res.stdout)

summary = "\n".join("%6d  %s" % (sum(c for _, c in v), r) for r, v in sorted(roots.items()))
for name, other in (("alpha", "beta"), ("beta", "alpha")):
    root = "worker-%s (%s)" % (name, tids[name])
    stacks = roots.get(root, [])
    n = sum(c for _, c in stacks)
    chk.check(n >= 15, "root %r exists with >= 15 samples (%d)" % (root, n), "roots:\n" + summary)
    burn = "%s_burn" % name
    inside = sum(c for f, c in stacks if burn in f)
    chk.check(n > 0 and inside >= 0.9 * n, "%s in >= 90%% of %s's samples: %d of %d" % (burn, root, inside, n),
              prof.top())
    elsewhere = [(f, c) for f, c in prof.stacks if burn in f and f[0] != root]
    chk.check(not elsewhere, "%s appears only under %r" % (burn, root),
              "\n".join("%d %s" % (c, ";".join(f)) for f, c in elsewhere[:5]))
chk.finish()
