"""-q: `ember record -q -o f -- chain 0.5` exits 0, writes the profile (with
hot in it) and prints nothing at all on stderr."""
import os
import emberlib as E

chk = E.Checker("e2e.quiet")
out = os.path.join(E.tmpdir(), "quiet.folded")
res = E.record(["-q", "-o", out], [E.target("chain"), "0.5"])
chk.check(res.rc == 0, "ember -q exits 0 (got %s)" % res.rc)
chk.check(res.stderr == "", "no stderr output at all with -q (%d bytes)" % len(res.stderr), res.stderr)
prof = E.load_profile(chk, out, res)
chk.check(prof.count(lambda f: "hot" in f) > 0, "profile has hot", prof.top(3))
res = E.record(["--quiet", "-o", out], [E.target("chain"), "0.3"])
chk.check(res.rc == 0 and res.stderr == "", "--quiet is the same (rc %s, %d bytes of stderr)"
          % (res.rc, len(res.stderr)), res.stderr)
chk.finish()
