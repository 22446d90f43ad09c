"""setcap: ember installed with file capabilities instead of run as root
(docs/permissions.md), on a copy of ember in a fresh 0755 directory, run as
user nobody (setpriv), against processes of root's and of nobody's:
- no capabilities: `record --kernel --idle` exits 0 with one line naming
  CAP_PERFMON (kernel frames excluded; when perf_event_paranoid >= 2) and
  one naming CAP_BPF (--idle not traced); `record -p ROOTPID` exits 77
  naming CAP_PERFMON; `dump -p ROOTPID` exits 77 naming CAP_SYS_PTRACE;
- cap_perfmon,cap_bpf+ep: ember itself has them (CapEff of its pid); the
  launched command has none (CapPrm, CapEff and CapAmb 0) and still gets
  LD_LIBRARY_PATH and TMPDIR, which secure-exec took from ember's own
  environment; `--kernel` on dd: >= 50% of the samples have kernel frames,
  no paranoid line, and when /proc/kallsyms hides addresses from nobody one
  line naming CAP_SYSLOG and every kernel frame [kernel+0x...];
  `record --idle -p` of nobody's own Python: off-CPU time traced, frames
  copied by the kernel (BPF), busy_function in >= 30% of the time;
  `record -p` and `top -p` of root's native process: main;a;b;hot in >= 80%
  / mix shown; `record -p` of root's Python: exits 0 with native frames and
  one line naming CAP_SYS_PTRACE (not "not a Python process"); `dump -p` of
  root's Python: 77 naming CAP_SYS_PTRACE; `dump -p` of nobody's own Python
  works (without Yama's ptrace restriction);
- + cap_sys_ptrace,cap_syslog: kernel frames named (>= 80% of them, when
  kernel.kptr_restrict <= 1); root's Python attached: its functions in
  >= 50% of the samples; dumped: busy_function on its stack.
Skips (77) unless run as root with setcap, setpriv and user nobody, on a
kernel whose bounding set holds the capabilities, with a temporary
directory not mounted nosuid; the Python parts skip (said) without
/usr/bin/python3."""
import os
import re
import shutil
import subprocess
import time
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
CAPS = {"cap_sys_ptrace": 19, "cap_syslog": 34, "cap_perfmon": 38, "cap_bpf": 39}
BASE = "cap_perfmon,cap_bpf"
FULL = "cap_perfmon,cap_bpf,cap_sys_ptrace,cap_syslog"
DD = ["dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=100000"]

setcap = shutil.which("setcap")
if os.geteuid() == 0 and not setcap:
    E.skip("setcap (libcap2-bin) not installed")
bounding = int(E.proc_status(os.getpid()).get("CapBnd", "0"), 16)
missing = [c for c, bit in CAPS.items() if not bounding >> bit & 1]
if missing:
    E.skip("the capability bounding set lacks %s (a container without them)" % ",".join(missing))


def sysctl(name, dflt):
    try:
        with open("/proc/sys/kernel/" + name) as f:
            return int(f.read())
    except (OSError, ValueError):
        return dflt


paranoid = sysctl("perf_event_paranoid", 2)
kptr = sysctl("kptr_restrict", 0)
ptrace_scope = sysctl("yama/ptrace_scope", 0)
print("perf_event_paranoid = %d, kptr_restrict = %d, yama ptrace_scope = %d" % (paranoid, kptr, ptrace_scope))

chk = E.Checker("e2e.setcap")
box = E.nobody_sandbox([E.ember(), E.target("chain")], [os.path.join(HERE, "..", "python", "attach_target.py")])
nobody, bindir, outdir, as_nobody = box.user, box.bindir, box.outdir, box.prefix
if os.statvfs(bindir).f_flag & os.ST_NOSUID:
    E.skip("%s is on a nosuid mount: file capabilities are not honoured there" % bindir)
ember, chain = box.path("ember"), box.path("chain")
env = {"PATH": "/usr/bin:/bin", "HOME": outdir, "LANG": "C",
       "LD_LIBRARY_PATH": "/nonexistent/ember-setcap-lib", "TMPDIR": outdir}
has_py = os.access(PY, os.X_OK)
if not has_py:
    print("SKIP (part): %s not installed, no Python cases" % PY)


def give(caps):
    """ember's file capabilities: caps ("a,b") with +ep, or none."""
    cmd = [setcap, caps + "+ep", ember] if caps else [setcap, "-r", ember]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0 and caps:
        E.skip("setcap failed (a filesystem without extended attributes?): %s" % res.stdout.strip())
    print("# ember's file capabilities: %s" % (caps + "+ep" if caps else "none"), flush=True)


def ember_run(args, timeout=60):
    return E.run(as_nobody + [ember] + args, env=env, cwd=outdir, timeout=timeout)


def lines_with(res, *words):
    return [l for l in res.stderr.splitlines() if all(w in l for w in words)]


def out(name):
    return os.path.join(outdir, name)


def kernel_frames(prof):
    """(samples with a kernel frame, those frames' samples by unnamed/named)."""
    with_k = prof.count(lambda f: any(x.endswith("_[k]") for x in f))
    unnamed = prof.count(lambda f: any(x.startswith("[kernel+0x") for x in f))
    return with_k, unnamed


def kallsyms_hidden_from_nobody():
    res = subprocess.run(as_nobody + ["/bin/sh", "-c", "grep -m1 ' [tT] ' /proc/kallsyms"],
                         stdout=subprocess.PIPE, text=True, env=env)
    first = res.stdout.split(" ")[0].strip()
    return not first or int(first, 16) == 0


started = []


def start(cmd, as_user):
    p = subprocess.Popen((as_nobody if as_user else []) + cmd, cwd=outdir, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(p)
    return p.pid


def stop_started():
    for p in started:
        p.kill()
        p.wait()


def busy_in(prof, names):
    return prof.count(lambda f: any(x.startswith(tuple(n + " (" for n in names)) for x in f))


root_chain = start([chain, "60"], False)
root_py = start([PY, os.path.join(bindir, "attach_target.py"), out("beat-root")], False) if has_py else 0
own_py = start([PY, os.path.join(bindir, "attach_target.py"), out("beat-own")], True) if has_py else 0
time.sleep(0.5)   # the Python targets past their start-up
hidden = kallsyms_hidden_from_nobody()
print("/proc/kallsyms hides addresses from nobody: %s" % hidden)

try:
    # --- no file capabilities: each privileged feature named in one line.
    give(None)
    res = ember_run(["record", "--kernel", "--idle", "-o", out("none.folded"), "--", "/bin/sh", "-c",
                     "exec " + " ".join(DD)])
    if paranoid >= 3:
        chk.check(res.rc == 77 and lines_with(res, "CAP_PERFMON"),
                  "no caps, perf_event_paranoid >= 3: exit 77 with a line naming CAP_PERFMON (got %s)" % res.rc,
                  res.stderr)
    else:
        chk.check(res.rc == 0, "no caps: record --kernel --idle exits 0 (got %s)" % res.rc, res.stderr)
        if paranoid >= 2:
            chk.check(len(lines_with(res, "kernel frames", "CAP_PERFMON")) == 1,
                      "no caps: one line says kernel frames are excluded and names CAP_PERFMON", res.stderr)
        chk.check(len(lines_with(res, "--idle:", "CAP_BPF", "CAP_PERFMON")) == 1,
                  "no caps: one line says --idle is not traced and names CAP_BPF and CAP_PERFMON", res.stderr)
    res = ember_run(["record", "-p", str(root_chain), "-d", "0.3", "-o", out("none-p.folded")])
    chk.check(res.rc == 77 and lines_with(res, "another user", "CAP_PERFMON"),
              "no caps: record -p ROOTPID -> 77 with a line naming CAP_PERFMON (got %s)" % res.rc, res.stderr)
    res = ember_run(["dump", "-p", str(root_chain)])
    chk.check(res.rc == 77 and lines_with(res, "CAP_SYS_PTRACE"),
              "no caps: dump -p ROOTPID -> 77 with a line naming CAP_SYS_PTRACE (got %s)" % res.rc, res.stderr)

    # --- cap_perfmon,cap_bpf: the recommended install.
    give(BASE)
    script = ("grep ^Cap /proc/$PPID/status > ember.caps; grep ^Cap /proc/$$/status > child.caps; "
              "env > child.env; exec " + " ".join(DD))
    res = ember_run(["record", "--kernel", "-F", "299", "-o", out("base.folded"), "--", "/bin/sh", "-c", script])
    chk.check(res.rc == 0, "%s: record --kernel exits 0 (got %s)" % (BASE, res.rc), res.stderr)
    caps = {}
    for who in ("ember", "child"):
        try:
            with open(out(who + ".caps")) as f:
                caps[who] = {k: int(v, 16) for k, v in (l.split(":") for l in f if ":" in l)}
        except OSError:
            caps[who] = {}
    want = (1 << CAPS["cap_perfmon"]) | (1 << CAPS["cap_bpf"])
    chk.check(caps["ember"].get("CapEff") == want, "%s: ember runs with exactly them effective (CapEff %x)"
              % (BASE, caps["ember"].get("CapEff", -1)), str(caps))
    chk.check(caps["child"] and all(caps["child"].get(k) == 0 for k in ("CapPrm", "CapEff", "CapAmb")),
              "%s: the launched command has no capabilities (CapPrm, CapEff, CapAmb 0)" % BASE, str(caps))
    try:
        with open(out("child.env")) as f:
            child_env = f.read().splitlines()
    except OSError:
        child_env = []
    chk.check("LD_LIBRARY_PATH=" + env["LD_LIBRARY_PATH"] in child_env and "TMPDIR=" + outdir in child_env,
              "%s: the launched command gets LD_LIBRARY_PATH and TMPDIR as set (secure-exec took them from "
              "ember's environment)" % BASE, "\n".join(child_env))
    chk.check(not lines_with(res, "perf_event_paranoid"), "%s: no line about kernel frames excluded" % BASE,
              res.stderr)
    prof = E.load_profile(chk, out("base.folded"), res)
    with_k, unnamed = kernel_frames(prof)
    chk.check(prof.total > 0 and with_k >= 0.5 * prof.total,
              "%s: dd's samples have kernel frames: %d of %d" % (BASE, with_k, prof.total), prof.top(5))
    if hidden:
        chk.check(len(lines_with(res, "--kernel", "kallsyms", "CAP_SYSLOG")) == 1,
                  "%s: one line says kernel symbols are hidden and names CAP_SYSLOG" % BASE, res.stderr)
        chk.check(unnamed == with_k, "%s: kernel frames are [kernel+0x...]: %d of %d samples"
                  % (BASE, unnamed, with_k), prof.top(5))
    if has_py:
        res = ember_run(["record", "--idle", "-p", str(own_py), "-d", "0.3", "-o", out("own.folded")])
        chk.check(res.rc == 0, "%s: record --idle -p of nobody's own Python exits 0 (got %s)" % (BASE, res.rc),
                  res.stderr)
        chk.check(lines_with(res, "off CPU traced") and not lines_with(res, "--idle:", "CAP_BPF"),
                  "%s: --idle traces off-CPU time" % BASE, res.stderr)
        chk.check(lines_with(res, "copied by the kernel at the sample (BPF)") and
                  not lines_with(res, "read after each sample"),
                  "%s: the BPF copier copies the Python frames" % BASE, res.stderr)
        prof = E.load_profile(chk, out("own.folded"), res)
        n = busy_in(prof, ("busy_function",))
        chk.check(n >= 0.3 * prof.total, "%s: busy_function in %d of %d microseconds (>= 30%%: off-CPU "
                  "intervals before the copier knew the thread keep native frames only)"
                  % (BASE, n, prof.total), prof.top(5))
    res = ember_run(["record", "-p", str(root_chain), "-d", "0.3", "-o", out("p.folded")])
    chk.check(res.rc == 0, "%s: record -p ROOTPID exits 0 (got %s)" % (BASE, res.rc), res.stderr)
    prof = E.load_profile(chk, out("p.folded"), res)
    good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
    chk.check(prof.total > 0 and good >= 0.8 * prof.total,
              "%s: root's process attached: main;a;b;hot in %d of %d samples" % (BASE, good, prof.total),
              prof.top(5))
    res = ember_run(["top", "-d", "0.4", "--interval", "0.3", "-p", str(root_chain)])
    chk.check(res.rc == 0 and re.search(r"\bmix\b", res.stdout), "%s: top -p ROOTPID shows mix (exit %s)"
              % (BASE, res.rc), res.stdout[-800:] + res.stderr)
    if has_py:
        res = ember_run(["record", "-p", str(root_py), "-d", "0.3", "-o", out("rpy.folded")])
        chk.check(res.rc == 0 and len(lines_with(res, "native profile only", "CAP_SYS_PTRACE")) == 1 and
                  not lines_with(res, "not a Python process"),
                  "%s: root's Python attached: exit 0, one line naming CAP_SYS_PTRACE for its Python frames "
                  "(got %s)" % (BASE, res.rc), res.stderr)
        res = ember_run(["dump", "-p", str(root_py)])
        chk.check(res.rc == 77 and lines_with(res, "CAP_SYS_PTRACE"),
                  "%s: dump -p of root's Python -> 77 naming CAP_SYS_PTRACE (got %s)" % (BASE, res.rc), res.stderr)
        if ptrace_scope == 0:
            res = ember_run(["dump", "-p", str(own_py)])
            chk.check(res.rc == 0 and "busy_function (" in res.stdout,
                      "%s: dump -p of nobody's own Python shows busy_function (exit %s)" % (BASE, res.rc),
                      res.stdout[-1500:] + res.stderr)
        else:
            print("SKIP (part): yama ptrace_scope %d: nobody may not dump its own non-child process" % ptrace_scope)

    # --- + cap_sys_ptrace, cap_syslog: other users' processes, kernel names.
    give(FULL)
    res = ember_run(["record", "--kernel", "-F", "299", "-o", out("full.folded"), "--"] + DD)
    chk.check(res.rc == 0 and not lines_with(res, "CAP_SYSLOG"), "%s: record --kernel exits 0 without a line "
              "about kernel symbols (got %s)" % (FULL, res.rc), res.stderr)
    prof = E.load_profile(chk, out("full.folded"), res)
    with_k, unnamed = kernel_frames(prof)
    if kptr <= 1:
        chk.check(with_k >= 0.5 * prof.total and unnamed <= 0.2 * with_k,
                  "%s: kernel frames named: %d of %d samples with kernel frames have an unnamed one"
                  % (FULL, unnamed, with_k), prof.top(5))
    else:
        print("SKIP (part): kernel.kptr_restrict=%d hides kernel symbols even from CAP_SYSLOG" % kptr)
    if has_py:
        res = ember_run(["record", "-p", str(root_py), "-d", "0.3", "-o", out("rpy2.folded")])
        prof = E.load_profile(chk, out("rpy2.folded"), res)
        n = busy_in(prof, ("busy_function",))
        chk.check(res.rc == 0 and n >= 0.5 * prof.total, "%s: root's Python attached: busy_function in %d of %d "
                  "samples (exit %s)" % (FULL, n, prof.total, res.rc), res.stderr + prof.top(5))
        # A dump is one moment: the target spends a little of its time
        # writing its heartbeat in main, so up to three dumps are taken.
        for _ in range(3):
            res = ember_run(["dump", "-p", str(root_py)])
            if res.rc != 0 or "busy_function (" in res.stdout:
                break
        chk.check(res.rc == 0 and "busy_function (" in res.stdout,
                  "%s: dump -p of root's Python shows busy_function (exit %s)" % (FULL, res.rc),
                  res.stdout[-1500:] + res.stderr)
finally:
    stop_started()
chk.finish()
