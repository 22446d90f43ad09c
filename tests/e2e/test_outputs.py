"""How outputs are written, and what a kill leaves (docs/cli.md "Outputs").

- SIGKILL to `ember record` mid-run (no checkpoint): every pre-existing output
  of the same name is byte-identical afterwards, and no temporary file is left;
- `--checkpoint 1`, SIGKILL after ~3 s: the outputs hold the profile so far
  (`ember report` reads the .ember file, the folded file parses, both have
  samples), replacing the old files;
- checkpoints every 1 s at -F 999: each paused sampling for under 40 ms (the
  rings hold ~128 samples a CPU, drained at half full: 64 ms at 999 Hz; the
  fork takes ~1 ms, ~10 in the ASan build), and a run loses no sample
  (checked in an unstalled run, as the other e2e tests do);
- `convert` of bad input onto an existing file: exit 65, the old file is
  unchanged; a write that fails halfway (a full filesystem) leaves the old
  file whole and no temporary file: exit 73;
- a replaced file keeps its mode; a new one gets 0666 less the umask; an
  output through a symlink replaces the file it points to, the link stays;
- a read-only directory with the default output names: exit 73, one line,
  and the command never ran (its side effect, a touched file, is absent);
- `-o /dev/stdout` writes to a pipe and to a redirected file, in place (no
  temporary file beside it, /dev/stdout still a symlink); a FIFO gets the
  profile in place.
Root ignores directory permissions: the read-only directory is then a
read-only tmpfs in a private mount namespace (unshare -m), or /sys; the test
skips that part loudly when neither is available."""
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
import emberlib as E

chk = E.Checker("e2e.outputs")
d = E.tmpdir()
chain = E.target("chain")


def leftovers(directory, name="*"):
    return glob.glob(os.path.join(directory, name + ".ember-tmp.*"))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def start_record(opts, cmd):
    """ember record in its own session (the command too), output discarded."""
    return subprocess.Popen([E.ember(), "record"] + opts + ["--"] + cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def kill_ember(p):
    """SIGKILL ember alone (as the OOM killer would), then its command."""
    try:
        os.kill(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    E.kill_group(p.pid)
    p.stderr.close()


# ---- SIGKILL without checkpoints: the old files are untouched
old = {ext: ("old %s profile, kept\n" % ext).encode() * 50 for ext in (".folded", ".svg", ".ember")}
paths = {ext: os.path.join(d, "killed" + ext) for ext in old}
for ext in old:
    write(paths[ext], old[ext])
p = start_record(["--checkpoint", "0", "-F", "999"] + sum([["-o", x] for x in paths.values()], []),
                 [chain, "20"])
time.sleep(1.5)
chk.check(p.poll() is None, "ember still records after 1.5 s (chain runs 20 s)")
kill_ember(p)
for ext in old:
    chk.check(read(paths[ext]) == old[ext], "SIGKILL mid-record: the old %s file is byte-identical" % ext)
chk.check(not leftovers(d), "SIGKILL mid-record: no temporary file left", "\n".join(leftovers(d)))

# ---- SIGKILL with checkpoints every second: the profile so far is there
ck = {ext: os.path.join(d, "ck" + ext) for ext in (".folded", ".ember")}
for ext in ck:
    write(ck[ext], b"old\n")
p = start_record(["--checkpoint", "1", "-F", "999", "-o", ck[".folded"], "-o", ck[".ember"]], [chain, "30"])
t0 = time.monotonic()
time.sleep(3)
# A loaded machine may be slow to write the first checkpoint: wait for it (at most 20 s).
while time.monotonic() - t0 < 20 and any(read(x) == b"old\n" for x in ck.values()):
    time.sleep(0.2)
alive = p.poll() is None
kill_ember(p)
chk.check(alive, "ember was still recording when killed (%.1f s in)" % (time.monotonic() - t0))
res = E.run([E.ember(), "report", ck[".ember"]])
m = re.search(r"^samples: (\d+)", res.stdout, re.M)
chk.check(res.rc == 0 and m and int(m.group(1)) >= 50,
          "after SIGKILL, `ember report` reads the checkpointed .ember file: >= 50 samples", res.describe())
prof = E.parse_folded(ck[".folded"])
E.check_format(chk, prof)
chk.check(prof.total >= 50 and any(s[-1] == "mix" for s, _ in prof.stacks),
          "after SIGKILL, the checkpointed folded file has the samples so far, in `mix` (%d)" % prof.total,
          prof.text[:2000])

# ---- checkpoints do not stall sampling
ckf = os.path.join(d, "pause.folded")
res, why = E.record_unstalled(["--checkpoint", "1", "-F", "999", "-o", ckf], [chain, "3.5"])
m = re.search(r"(\d+) checkpoints? written, every 1 s .*sampling paused ([0-9.]+) ms at most", res.stderr)
chk.check(res.rc == 0 and m and int(m.group(1)) >= 1,
          "a 3.5 s run with --checkpoint 1 writes checkpoints and says so", res.describe())
if m:
    chk.check(float(m.group(2)) < 40, "starting a checkpoint paused sampling < 40 ms (%s ms)" % m.group(2))
summary = E.parse_summary(res.stderr)
if why:
    print("NOT CHECKED: no sample lost with checkpoints every second: every run was stalled (%s)" % why)
else:
    chk.check(summary and summary["lost"] == 0, "-F 999 with checkpoints every 1 s: 0 samples lost",
              res.describe())

# ---- convert: bad input leaves the old output alone
good_ember = ck[".ember"]
target = os.path.join(d, "conv.svg")
write(target, b"<svg>old</svg>\n")
bad = os.path.join(d, "bad.ember")
write(bad, b"\x1f\x8b\x08\x00garbage, not a profile")
res = E.run([E.ember(), "convert", bad, "-o", target])
chk.check(res.rc == 65, "convert of a corrupt .ember file exits 65", res.describe())
chk.check(read(target) == b"<svg>old</svg>\n", "convert failed: the old output is unchanged")
# (only conv.svg's: a SIGKILL during a checkpoint above may leave its own, as documented)
chk.check(not leftovers(d, "conv.svg"), "convert failed: no temporary file left", "\n".join(leftovers(d)))

# ---- modes: kept when replaced, umask for a new file; symlinks stay links
os.chmod(target, 0o640)
res = E.run([E.ember(), "convert", good_ember, "-o", target])
chk.check(res.rc == 0 and read(target).startswith(b"<?xml"), "convert replaces an existing output", res.describe())
chk.check(stat.S_IMODE(os.stat(target).st_mode) == 0o640, "the replaced output keeps its mode 0640 (%o)" %
          stat.S_IMODE(os.stat(target).st_mode))
fresh = os.path.join(d, "fresh.folded")
res = E.run(["sh", "-c", 'umask 027 && exec "$0" convert "$1" -o "$2"', E.ember(), good_ember, fresh])
chk.check(res.rc == 0 and stat.S_IMODE(os.stat(fresh).st_mode) == 0o640,
          "a new output gets 0666 less the umask (027: 0640)", res.describe())
real = os.path.join(d, "real.folded")
link = os.path.join(d, "link.folded")
write(real, b"old\n")
os.symlink("real.folded", link)
res = E.run([E.ember(), "convert", good_ember, "-o", link])
chk.check(res.rc == 0 and os.path.islink(link) and read(real) != b"old\n" and read(real) == read(fresh),
          "an output through a symlink replaces the file it points to; the link stays", res.describe())

# ---- /dev/stdout and FIFOs: written in place
res = E.run([E.ember(), "convert", good_ember, "--format", "folded", "-o", "/dev/stdout"])
chk.check(res.rc == 0 and res.stdout.encode() == read(fresh), "-o /dev/stdout to a pipe: the folded profile",
          res.describe())
redirected = os.path.join(d, "redirected.txt")
with open(redirected, "wb") as out:
    rc = subprocess.call([E.ember(), "convert", "-q", good_ember, "--format", "folded", "-o", "/dev/stdout"],
                         stdout=out)
chk.check(rc == 0 and read(redirected) == read(fresh), "-o /dev/stdout redirected to a file: written there")
chk.check(os.path.islink("/dev/stdout") and not leftovers("/dev") and not leftovers("/proc/self/fd"),
          "-o /dev/stdout: /dev/stdout is still a symlink, no temporary file beside it")
res = E.record(["-q", "--format", "folded", "-o", "/dev/stdout"], [chain, "0.3"])
chk.check(res.rc == 0 and re.search(r"^_start;.*;mix \d+$", res.stdout, re.M),
          "record -o /dev/stdout: the folded profile on stdout", res.describe())
fifo = os.path.join(d, "fifo.folded")
os.mkfifo(fifo)
got = []
reader = threading.Thread(target=lambda: got.append(read(fifo)), daemon=True)
reader.start()
res = E.run([E.ember(), "convert", good_ember, "-o", fifo])
reader.join(10)
if reader.is_alive():   # ember never opened it: let the reader go
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
chk.check(res.rc == 0 and got and got[0] == read(fresh) and stat.S_ISFIFO(os.stat(fifo).st_mode),
          "-o FIFO: the profile goes through the FIFO, which stays a FIFO", res.describe())


# ---- a write that fails halfway, and a read-only directory
def private_tmpfs(script, *argv):
    """sh -c SCRIPT in a private mount namespace with a tmpfs ($1 is its
    options, $2 the mount point), or None when that is not possible here."""
    if not shutil.which("unshare"):
        return None
    probe = E.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs -o ro,size=64k tmpfs "$0"', d], quiet=True)
    if probe.rc != 0:
        return None
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs -o "$1" tmpfs "$2" || exit 99; ' + script, "sh"] + list(argv)


many = os.path.join(d, "many.folded")   # 3000 stacks: an SVG far larger than a 16 KiB tmpfs
with open(many, "w") as f:
    f.writelines("main;work_%d;step_%d %d\n" % (i // 30, i, 1 + i % 7) for i in range(3000))
big = os.path.join(d, "big.svg")
res = E.run([E.ember(), "convert", many, "-o", big], quiet=True)
full_dir = os.path.join(d, "full")
os.mkdir(full_dir)
cmd = private_tmpfs('echo kept > "$2/x.svg" && "$3" convert "$4" -o "$2/x.svg"; echo "rc=$?"; '
                    'cat "$2/x.svg"; ls "$2"', "size=16k", full_dir, E.ember(), many)
if res.rc != 0 or os.path.getsize(big) <= 64 * 1024:
    chk.check(False, "the 3000-stack profile converts to an SVG over 64 KiB", res.describe())
elif cmd is None:
    print("SKIP (part) LOUDLY: cannot mount a tmpfs in a private mount namespace here (unshare -m): "
          "a write that fails halfway is NOT CHECKED")
else:
    res = E.run(cmd)
    chk.check("rc=73" in res.stdout, "a write that fails halfway (full filesystem) exits 73", res.describe())
    chk.check(res.stdout.splitlines()[1:] == ["kept", "x.svg"],
              "the failed write left the old file whole and no temporary file", res.stdout)
    chk.check(len(res.stderr_lines()) == 1 and "x.svg" in res.stderr and ".ember-tmp." not in res.stderr,
              "the failed write: one line naming the output (not the temporary file)", res.stderr)

side = os.path.join(d, "side-effect")
argv = [os.path.abspath(E.ember()), "record", "--", "touch", side]
ro = os.path.join(d, "ro")
os.mkdir(ro, 0o555)
res, how = None, ""
if os.geteuid() != 0:
    res, how = E.run(argv, cwd=ro), "a directory without write permission"
else:
    cmd = private_tmpfs('cd "$2" && shift 2 && exec "$@"', "ro,size=64k", ro)
    if cmd is not None:
        res, how = E.run(cmd + argv), "a read-only tmpfs"
    else:
        try:
            open("/sys/ember-e2e-probe", "w").close()
            os.unlink("/sys/ember-e2e-probe")
        except OSError:
            res, how = E.run(argv, cwd="/sys"), "/sys (root cannot create files there)"
if res is None:
    print("SKIP (part) LOUDLY: no read-only directory available to root here (no unshare -m mount, "
          "/sys writable): the default-output check is NOT CHECKED")
else:
    lines = res.stderr_lines()
    chk.check(res.rc == 73, "default outputs in %s: exit 73 (got %s)" % (how, res.rc), res.describe())
    chk.check(len(lines) == 1 and lines[0].startswith("ember: cannot write 'touch-PID.svg'"),
              "default outputs in %s: one line naming the output" % how, res.stderr)
    chk.check(not os.path.exists(side), "default outputs in %s: the command never ran (nothing touched)" % how)

chk.finish()
