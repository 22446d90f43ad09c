"""non-root: ember run as user nobody (setpriv), with kernel.perf_event_paranoid
as it is (must be <= 2), on copies of ember and chain in a fresh 0755
directory, writing into a directory only nobody can write.
- `ember record -o OUT -- chain 1.0` exits 0, main;a;b;hot is in >= 90% of
  the samples, and stderr has a line mentioning that kernel frames are
  excluded (a line containing "kernel");
- `ember record -p 1 -d 1` (another user's process) exits 77 with a message
  mentioning permission;
- Python (/usr/bin/python3, when present): the kernel's frame copier (BPF)
  is not permitted, so ember says so in one line and reads the frames after
  each sample instead: exit 0, the script's functions in the profile.
Skips (77) unless run as root with setpriv and user nobody available, or when
perf_event_paranoid >= 3 (then unprivileged perf_event_open is impossible)."""
import os
import shutil
import emberlib as E

with open("/proc/sys/kernel/perf_event_paranoid") as f:
    paranoid = int(f.read())
if paranoid >= 3:
    E.skip("kernel.perf_event_paranoid is %d: unprivileged profiling is disabled" % paranoid)
print("perf_event_paranoid = %d" % paranoid)

chk = E.Checker("e2e.nonroot")
box = E.nobody_sandbox([E.ember(), E.target("chain")])
nobody, bindir, outdir, as_nobody = box.user, box.bindir, box.outdir, box.prefix
ember, chain = box.path("ember"), box.path("chain")
env = {"PATH": "/usr/bin:/bin", "HOME": outdir, "LANG": "C"}

out = os.path.join(outdir, "nobody.folded")
res = E.run(as_nobody + [ember, "record", "-o", out, "--", chain, "1.0"], env=env, cwd=outdir)
chk.check(res.rc == 0, "as nobody: ember record -- chain exits 0 (got %s)" % res.rc)
prof = E.load_profile(chk, out, res)
good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
chk.check(prof.total > 0 and good >= 0.9 * prof.total,
          "as nobody: main;a;b;hot in >= 90%% of samples: %d of %d" % (good, prof.total), prof.top(5))
if os.path.exists(out):
    chk.check(os.stat(out).st_uid == nobody.pw_uid, "the output file belongs to nobody")
kernel_lines = [l for l in res.stderr.splitlines() if "kernel" in l.lower()]
chk.check(kernel_lines, "as nobody: stderr says kernel frames are excluded (a line mentioning kernel)",
          res.stderr)

res = E.run(as_nobody + [ember, "record", "-p", "1", "-d", "1", "-o", os.path.join(outdir, "p1.folded")],
            env=env, cwd=outdir, timeout=30)
chk.check(res.rc == 77, "as nobody: -p 1 (another user's process) -> 77 (got %s)" % res.rc)
chk.check("permission" in res.stderr.lower(), "as nobody: -p 1 message mentions permission", res.stderr)

PY = "/usr/bin/python3"
if os.access(PY, os.X_OK):
    script = os.path.join(bindir, "zlib_pair.py")
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "zlib_pair.py"), script)
    os.chmod(script, 0o644)
    out = os.path.join(outdir, "py.folded")
    res = E.run(as_nobody + [ember, "record", "-o", out, "--", PY, script, "1"], env=env, cwd=outdir, timeout=60)
    chk.check(res.rc == 0, "as nobody: ember record -- python3 zlib_pair.py exits 0 (got %s)" % res.rc, res.stderr)
    lines = [l for l in res.stderr.splitlines() if "read after each sample" in l]
    chk.check(len(lines) == 1 and "BPF" in lines[0] and "CAP_BPF" in lines[0],
              "as nobody: one line says the BPF frame copier is not permitted and frames are read after "
              "each sample", res.stderr)
    prof = E.load_profile(chk, out, res)
    py_samples = prof.count(lambda f: any(x.startswith(("compress_step (", "decompress_step (")) for x in f))
    chk.check(py_samples >= 0.5 * prof.total, "as nobody: Python frames still merged (%d of %d samples in "
              "compress_step/decompress_step)" % (py_samples, prof.total), prof.top(8))
else:
    print("SKIP (part): %s not installed, no Python case" % PY)
chk.finish()
