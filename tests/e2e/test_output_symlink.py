"""Outputs never follow another user's symlink in a sticky, world-writable
directory (docs/cli.md "Outputs"), as the kernel's protected_symlinks rule.

In a fresh 1777 directory, user nobody plants `prof.svg -> victim` (victim
a root-owned file elsewhere) and a dangling `dang.svg -> missing`:
- `ember record -o prof.svg -- CMD` as root: exit 73, one line naming the
  path and the link's owner, CMD never ran (its marker file is absent), the
  victim is byte-identical;
- the same with dang.svg: exit 73, the link's target is not created;
- attach mode with the default name (pid-PID.svg planted by nobody):
  exit 73 before attaching, the victim unchanged;
- a link root itself owns in that directory still leads to its file, which
  receives the profile."""
import os
import subprocess
import emberlib as E

chk = E.Checker("e2e.output_symlink")
sb = E.nobody_sandbox([])
uid, gid = sb.user.pw_uid, sb.user.pw_gid
ember = E.ember()
sticky = E.tmpdir(0o1777)
elsewhere = E.tmpdir(0o755)
victim = os.path.join(elsewhere, "victim")
ORIGINAL = b"root's file, not to be replaced\n"
with open(victim, "wb") as f:
    f.write(ORIGINAL)
missing = os.path.join(elsewhere, "missing")


def plant(name, dest, names=()):
    """A symlink NAME -> DEST in the sticky directory, created by nobody
    (and one at each of names, to the same DEST)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(gid)
            os.setuid(uid)
            for n in (name,) + tuple(names):
                os.symlink(dest, os.path.join(sticky, n))
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        E.fail_now("nobody could not plant %s" % name)
    return os.path.join(sticky, name)


def refused(res, path, what):
    lines = res.stderr_lines()
    chk.check(res.rc == 73, "%s: exit 73" % what, res.describe())
    chk.check(len(lines) == 1 and path in lines[0] and "nobody" in lines[0],
              "%s: one line naming the path and the link's owner" % what, res.describe())


def victim_intact(what):
    with open(victim, "rb") as f:
        chk.check(f.read() == ORIGINAL, "%s: the victim is unchanged" % what)


marker = os.path.join(elsewhere, "ran")
cmd = ["/bin/sh", "-c", "touch %s" % marker]

link = plant("prof.svg", victim)
res = E.run([ember, "record", "-q", "-o", link, "--"] + cmd, cwd=sticky)
refused(res, link, "a link to root's file")
chk.check(not os.path.exists(marker), "the command never ran")
victim_intact("-o through nobody's link")
chk.check(os.path.islink(link), "the link is left as it was")

dang = plant("dang.svg", missing)
res = E.run([ember, "record", "-q", "-o", dang, "--"] + cmd, cwd=sticky)
refused(res, dang, "a dangling link")
chk.check(not os.path.exists(missing), "the dangling link's target is not created")
chk.check(not os.path.exists(marker), "the command never ran")

sleeper = subprocess.Popen(["sleep", "30"])
try:
    dflt = plant("pid-%d.svg" % sleeper.pid, victim)
    res = E.run([ember, "record", "-q", "-d", "1", "-p", str(sleeper.pid)], cwd=sticky)
    refused(res, "pid-%d.svg" % sleeper.pid, "the default name in attach mode")
    victim_intact("the default name")
finally:
    sleeper.kill()
    sleeper.wait()

# The default names, PROG-PID.svg and .ember, are known only once the
# command has its pid: links nobody planted at the next pids' names (to a
# file of nobody's) are replaced by the outputs, which stay root's files.
theirs = os.path.join(elsewhere, "nobodys")
with open(theirs, "w") as f:
    f.write("NOBODY\n")
os.chown(theirs, uid, gid)
with open("/proc/sys/kernel/ns_last_pid") as f:
    last = int(f.read())
names = ["chain-%d.%s" % (p, ext) for p in range(last + 1, last + 400) for ext in ("svg", "ember")]
plant(names[0], theirs, names[1:])
res = E.run([ember, "record", "-q", "--", E.target("chain"), "0.3"], cwd=sticky)
chk.check(res.rc == 0, "default names: exit 0", res.describe())
outs = [n for n in names if not os.path.islink(os.path.join(sticky, n))]
if not outs:
    print("NOT CHECKED: default names: the command's pid was past the 400 planted links")
else:
    chk.check(len(outs) == 2, "default names: both outputs replaced a planted link (%s)" % outs, res.describe())
for n in outs:
    st = os.lstat(os.path.join(sticky, n))
    chk.check(st.st_uid == 0 and st.st_size > 0, "default names: %s is root's own file (uid %d, %d bytes)"
              % (n, st.st_uid, st.st_size))
chk.check(open(theirs).read() == "NOBODY\n", "default names: nobody's file is untouched")

own_file = os.path.join(elsewhere, "own.svg")
own = os.path.join(sticky, "own.svg")
os.symlink(own_file, own)
res = E.run([ember, "record", "-q", "-o", own, "--"] + cmd, cwd=sticky)
chk.check(res.rc == 0, "root's own link: exit 0", res.describe())
chk.check(os.path.islink(own), "root's own link stays a link")
chk.check(os.path.isfile(own_file) and b"<svg" in open(own_file, "rb").read(),
          "root's own link leads to the profile")
chk.check(os.path.exists(marker), "the command ran")
chk.finish()
