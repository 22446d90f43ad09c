"""chain: `ember record -- chain 1.5` (main -> a -> b -> hot, single thread).

- exit status 0, output in the documented folded format;
- >= 90% of samples contain main;a;b;hot as consecutive frames with only the
  inlined helpers (mix, tgt_now) after hot;
- sample count plausible: >= 50% of 99 Hz x the CPU time the target reports,
  and not more than 125% of 99 Hz x the wall time of the run (+5);
- no frame is a raw address (only `[module+0xADDR]` is allowed).
"""
import os
import emberlib as E

chk = E.Checker("e2e.chain")
out = os.path.join(E.tmpdir(), "chain.folded")
res = E.record(["-o", out], [E.target("chain"), "1.5"])
chk.check(res.rc == 0, "ember exits 0 when the command exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)
E.check_format(chk, prof)

total = prof.total
good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
chk.check(total > 0 and good >= 0.9 * total,
          "main;a;b;hot (+ inlined mix) in >= 90%% of samples: %d of %d" % (good, total), prof.top())

cpu = E.stdout_value(res, "cpu_seconds")
chk.check(cpu is not None, "target reported its CPU time (cpu_seconds=%s)" % cpu, res.stdout)
if cpu is not None:
    lo = 0.5 * 99 * cpu
    hi = 1.25 * 99 * res.elapsed + 5
    chk.check(lo <= total <= hi,
              "sample count %d plausible for 99 Hz, %.2f CPU s, %.2f s wall (expected %.0f .. %.0f)"
              % (total, cpu, res.elapsed, lo, hi))

raw = E.raw_address_frames(prof)
chk.check(not raw, "no raw hex addresses as frame names (found %d)" % len(raw), "\n".join(raw[:10]))
chk.finish()
