"""sudo: ember run by root with the variables sudo sets (SUDO_UID, SUDO_GID,
SUDO_USER) for user nobody, launching a script that prints its uid, gid,
supplementary groups, HOME, USER and LOGNAME, then execs chain 0.5:

- by default the command runs as nobody: its uid and gid, exactly the
  groups the system gives nobody (getgrouplist), HOME from its passwd entry,
  USER and LOGNAME nobody -- and is still sampled across the switch:
  main;a;b;hot in >= 90% of the samples, at least 50% of 99 Hz x its CPU
  time; the output file belongs to root (ember does not hand it over);
- with --as-root: uid 0, gid 0, and HOME, USER, LOGNAME as ember had them;
- SUDO_UID that is not a number: exit 64, one line naming SUDO_UID.
Skips (77) unless run as root with user nobody."""
import os
import pwd
import shutil
import emberlib as E

if os.geteuid() != 0 or os.getuid() != 0:
    E.skip("not running as root: sudo's case cannot be made")
try:
    nobody = pwd.getpwnam("nobody")
except KeyError:
    E.skip("no user nobody")

IDS = """#!/bin/sh
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME user=$USER logname=$LOGNAME"
exec "$@"
"""

chk = E.Checker("e2e.sudo")
bindir = E.tmpdir(0o755)
parent = os.path.dirname(bindir)
if not os.stat(parent).st_mode & 0o001:
    E.skip("%s is not traversable by others" % parent)
ids, chain = os.path.join(bindir, "ids.sh"), os.path.join(bindir, "chain")
with open(ids, "w") as f:
    f.write(IDS)
shutil.copy(E.target("chain"), chain)
for p in (ids, chain):
    os.chmod(p, 0o755)
outdir = E.tmpdir()
env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "USER": "root", "LOGNAME": "root", "LANG": "C",
       "SUDO_UID": str(nobody.pw_uid), "SUDO_GID": str(nobody.pw_gid), "SUDO_USER": "nobody",
       "SUDO_COMMAND": "ember record"}


def run(opts, label):
    out = os.path.join(outdir, label + ".folded")
    res = E.record(opts + ["-o", out], [ids, chain, "0.5"], env=env, cwd=bindir)
    chk.check(res.rc == 0, "%s: ember exits 0 (got %s)" % (label, res.rc), res.describe())
    line = next((l for l in res.stdout.splitlines() if l.startswith("uid=")), "")
    fields = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
    fields["groups"] = line.split("groups=", 1)[1].split(" home=")[0] if "groups=" in line else ""
    return res, out, fields, line


res, out, got, line = run([], "as_user")
groups = " ".join(str(g) for g in sorted(set(os.getgrouplist("nobody", nobody.pw_gid))))
chk.check(got.get("uid") == str(nobody.pw_uid) and got.get("gid") == str(nobody.pw_gid),
          "the command runs as nobody (uid %d, gid %d): %s" % (nobody.pw_uid, nobody.pw_gid, line))
chk.check(" ".join(sorted(got.get("groups", "").split(), key=int)) == groups,
          "with nobody's groups (%s): %s" % (groups, line))
chk.check(got.get("home") == nobody.pw_dir and got.get("user") == "nobody" and got.get("logname") == "nobody",
          "HOME %s, USER and LOGNAME nobody: %s" % (nobody.pw_dir, line))
prof = E.load_profile(chk, out, res)
good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
cpu = E.stdout_value(res, "cpu_seconds")
chk.check(prof.total > 0 and good >= 0.9 * prof.total and cpu is not None and good >= 0.5 * 99 * cpu,
          "sampled after the switch: main;a;b;hot in %d of %d samples (%s CPU s)" % (good, prof.total, cpu),
          prof.top(5))
if os.path.exists(out):
    chk.check(os.stat(out).st_uid == 0, "the output file belongs to root")

res, out, got, line = run(["--as-root"], "as_root")
chk.check(got.get("uid") == "0" and got.get("gid") == "0", "--as-root: the command runs as root: %s" % line)
chk.check(got.get("home") == "/root" and got.get("user") == "root" and got.get("logname") == "root",
          "--as-root: HOME, USER, LOGNAME as ember had them: %s" % line)

env["SUDO_UID"] = "nobody"
res = E.record(["-o", os.path.join(outdir, "bad.folded")], [ids, "true"], env=env, cwd=bindir)
lines = [l for l in res.stderr_lines() if "SUDO_UID" in l]
chk.check(res.rc == 64 and len(res.stderr_lines()) == 1 and lines,
          "SUDO_UID=nobody (not a number): exit 64 with one line naming it (got %s)" % res.rc, res.stderr)
chk.finish()
