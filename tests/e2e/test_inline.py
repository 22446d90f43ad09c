"""inline: chain's `static inline` mix() is always inlined into hot(); ember
must show it as its own frame: `...;hot;mix` in >= 75% of all samples, and
mix never appears with any other parent than hot."""
import os
import emberlib as E

chk = E.Checker("e2e.inline")
out = os.path.join(E.tmpdir(), "inline.folded")
res = E.record(["-F", "199", "-o", out], [E.target("chain"), "1.2"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)

def hot_then_mix(frames):
    return any(frames[i] == "hot" and frames[i + 1] == "mix" for i in range(len(frames) - 1))

total = prof.total
n = prof.count(hot_then_mix)
chk.check(total > 0 and n >= 0.75 * total,
          "inlined mix is a frame under hot in >= 75%% of samples: %d of %d" % (n, total), prof.top())
wrong = [f for f, _ in prof.stacks if any(f[i] == "mix" and (i == 0 or f[i - 1] != "hot") for i in range(len(f)))]
chk.check(not wrong, "mix only ever appears directly under hot",
          "\n".join(";".join(f) for f in wrong[:5]))
chk.finish()
