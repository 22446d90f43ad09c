"""summary: stderr of `ember record -o f -- chain 1.0` has the documented
summary: a `wall ... s` line; `N samples, N lost, N truncated, N unwind
failures` with samples > 0, 0 truncated, lost and unwind failures <= 5% of
samples, and samples matching the folded total (within the unwind
failures); a top table mentioning hot; and `wrote FILE`."""
import os
import re
import emberlib as E

chk = E.Checker("e2e.summary")
out = os.path.join(E.tmpdir(), "summary.folded")
res = E.record(["-o", out], [E.target("chain"), "1.0"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc)
prof = E.load_profile(chk, out, res)
err = res.stderr
chk.check(re.search(r"wall [0-9.]+ s", err), "summary has the wall time line", err)
s = E.parse_summary(err)
chk.check(s is not None, "summary has `N samples, N lost, N truncated, N unwind failures`", err)
if s:
    n = s["samples"]
    chk.check(n > 0, "samples > 0 (%d)" % n)
    chk.check(s["truncated"] == 0, "0 truncated for a shallow stack (%d)" % s["truncated"])
    chk.check(s["lost"] <= 0.05 * n, "lost <= 5%% of samples (%d)" % s["lost"])
    chk.check(s["unwind_failures"] <= 0.05 * n, "unwind failures <= 5%% of samples (%d)" % s["unwind_failures"])
    chk.check(abs(prof.total - n) <= s["unwind_failures"],
              "summary samples (%d) match the folded total (%d)" % (n, prof.total))
m = re.search(r"^ember: top.*", err, re.M)
chk.check(m, "summary has a top functions table", err)
if m:
    chk.check(re.search(r"\bhot\b", err[m.start():]), "the top table mentions hot", err[m.start():])
chk.check(re.search(r"^ember: wrote .*%s" % re.escape(os.path.basename(out)), err, re.M),
          "summary says `ember: wrote %s`" % out, err)
chk.finish()
