"""truncation: deep.c recurses DEPTH frames of ~270 bytes, then spins.

1. DEPTH 2000, default --stack-size (64 KiB): >= 90% of samples start with a
   `[truncated]` root frame, the summary's truncated count is > 0, and the
   truncated stacks still hold correct frames (recurse...;bottom_spin).
2. --stack-size 4096 vs 65528 (DEPTH 2000): the bigger copy recovers more
   frames per sample (mean recurse frames >= 3x; in theory ~16x).
3. DEPTH 20: nothing truncated (summary 0, no `[truncated]` frame) and
   >= 90% of samples are main;recurse x 20;bottom_spin exactly."""
import os
import emberlib as E

chk = E.Checker("e2e.truncation")
d = E.tmpdir()
deep = E.target("deep")


def run(name, opts, depth, secs="1.0"):
    out = os.path.join(d, name + ".folded")
    res = E.record(opts + ["-o", out], [deep, str(depth), secs])
    chk.check(res.rc == 0, "%s: ember exits 0 (got %s)" % (name, res.rc), res.describe())
    return res, E.load_profile(chk, out, res)


def mean_recurse(prof):
    t = prof.total
    return sum(f.count("recurse") * c for f, c in prof.stacks) / t if t else 0.0


# 1. default stack copy, deep recursion
res, prof = run("deep-default", [], 2000)
E.check_format(chk, prof)
total = prof.total
trunc = prof.count(lambda f: f[0] == "[truncated]")
chk.check(total > 0 and trunc >= 0.9 * total, "[truncated] root in >= 90%% of samples: %d of %d"
          % (trunc, total), prof.top(5))
s = E.parse_summary(res.stderr)
chk.check(s is not None and s["truncated"] > 0, "summary reports truncated > 0 (%s)" % s, res.stderr)
sane = prof.count(lambda f: f[0] == "[truncated]" and len(f) >= 3 and f[1] == "recurse"
                  and E.chain_at_leaf(f, ("recurse", "bottom_spin"), ("tgt_now",))
                  and set(f[1:f.index("bottom_spin")]) == {"recurse"})
chk.check(trunc > 0 and sane >= 0.9 * trunc,
          "truncated stacks are [truncated];recurse;...;recurse;bottom_spin: %d of %d" % (sane, trunc),
          prof.top(5))
chk.check("main" not in prof.frames() or prof.count(lambda f: "main" in f) <= 0.05 * total,
          "main is (almost) never reached through 2000 frames with a 64 KiB copy")

# 2. small vs large copy
_, small = run("deep-4096", ["--stack-size", "4096"], 2000)
_, large = run("deep-65528", ["--stack-size", "65528"], 2000)
ms, ml = mean_recurse(small), mean_recurse(large)
chk.check(ms >= 3, "--stack-size 4096 still recovers some frames (mean %.1f recurse frames)" % ms, small.top(3))
chk.check(ml >= 3 * ms and ml > 0,
          "--stack-size 65528 recovers more frames per sample than 4096: mean %.1f vs %.1f" % (ml, ms),
          large.top(3))
t_small = small.count(lambda f: f[0] == "[truncated]")
chk.check(small.total > 0 and t_small >= 0.9 * small.total,
          "--stack-size 4096: [truncated] in >= 90%% of samples (%d of %d)" % (t_small, small.total))

# 3. shallow recursion is never truncated
res, prof = run("shallow", [], 20)
s = E.parse_summary(res.stderr)
chk.check(s is not None and s["truncated"] == 0, "depth 20: summary reports 0 truncated (%s)" % s, res.stderr)
chk.check("[truncated]" not in prof.frames(), "depth 20: no [truncated] frame", prof.top(3))
exact = prof.count(lambda f: E.chain_at_leaf(f, ("main",) + ("recurse",) * 20 + ("bottom_spin",), ("tgt_now",)))
chk.check(prof.total > 0 and exact >= 0.9 * prof.total,
          "depth 20: main;recurse x 20;bottom_spin in >= 90%% of samples: %d of %d" % (exact, prof.total),
          prof.top(3))
chk.finish()
