"""signals, launch mode (`ember record -o f -- CMD`):
- SIGINT sent to ember only         -> CMD gets it, ember exits 130, profile written;
- SIGINT to the process group        (a terminal's Ctrl-C) -> same;
- SIGTERM sent to ember only         -> ember exits 143, profile written;
- CMD SIGKILLs itself mid-run        -> ember exits 137, profile written;
- CMD segfaults mid-run              -> ember exits 139, profile written.
In every case the profile holds the command's hot function, and no process
of the command is left behind.
- SIGTERM or SIGINT to ember 0.02-0.3 s after it starts (before the exec,
  during setup, or while sampling): the command gets it, the profile holds
  its samples until it ends, ember exits with its status (see early())."""
import os
import signal
import subprocess
import time
import emberlib as E

chk = E.Checker("e2e.signals")
d = E.tmpdir()
chain = E.target("chain")


def finish(em, cmd, t0, timeout):
    """ember's Result once it exits, killed (res.timed_out) after timeout s."""
    timed_out = False
    try:
        _, err = em.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        E.kill_group(em.pid)
        _, err = em.communicate()
        timed_out = True
    res = E.Result(cmd, em.returncode, "", err, time.monotonic() - t0)
    res.timed_out = timed_out
    print(res.describe())
    return res


def interrupt(name, sig, group):
    out = os.path.join(d, name + ".folded")
    cmd = [E.ember(), "record", "-o", out, "--", chain, "30"]
    t0 = time.monotonic()
    em = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, preexec_fn=E._no_core)
    child = E.wait_for_child_exe(em.pid, chain)
    chk.check(child is not None, "%s: ember started the command" % name)
    time.sleep(1.0)                     # let it collect samples
    if group:
        os.killpg(em.pid, sig)
    else:
        os.kill(em.pid, sig)
    res = finish(em, cmd, t0, 20)
    chk.check(not res.timed_out, "%s: ember exits within 20 s of the signal" % name, res.stderr)
    want = 128 + sig
    chk.check(res.rc == want, "%s: ember exits %d (got %s)" % (name, want, res.rc))
    if child is not None:
        time.sleep(0.1)
        left = E.pid_alive(child)
        chk.check(not left, "%s: the command (pid %d) is gone" % (name, child))
        if left:
            os.kill(child, signal.SIGKILL)
    E.kill_group(em.pid)
    prof = E.load_profile(chk, out, res)
    n = prof.count(lambda f: "hot" in f)
    chk.check(n >= 10, "%s: profile written with the command's samples (hot in %d >= 10)" % (name, n),
              prof.top(5))


def crash(mode, want):
    out = os.path.join(d, mode + ".folded")
    res = E.record(["-o", out], [E.target("crash"), mode, "1.0"], cwd=d)
    chk.check(res.rc == want, "crash %s: ember exits %d (got %s)" % (mode, want, res.rc))
    prof = E.load_profile(chk, out, res)
    n = prof.count(lambda f: "crash_burn" in f)
    chk.check(n >= 10, "crash %s: profile written with crash_burn in %d samples (>= 10)" % (mode, n),
              prof.top(5))


interrupt("sigint-to-ember", signal.SIGINT, group=False)
interrupt("sigint-to-group", signal.SIGINT, group=True)
interrupt("sigterm-to-ember", signal.SIGTERM, group=False)
crash("kill", 128 + 9)
crash("segv", 128 + 11)


def early(sig, delay):
    """SIG to ember DELAY s after `ember record -- trapterm` starts, whether
    ember is still setting up or the command is already running: the
    command gets it (its marker names the signal), burns 0.5 s of CPU
    more, and the profile has those samples; ember exits 42, the
    command's status, with no stall. When the signal came before
    trapterm could install its handler, trapterm dies of it and ember
    exits 128+N: the signal reached it all the same."""
    name = "%s-at-%.2fs" % (signal.Signals(sig).name, delay)
    out = os.path.join(d, name + ".folded")
    marker = os.path.join(d, name + ".got")
    cmd = [E.ember(), "record", "-F", "199", "-o", out, "--", trapterm, marker, "0.5"]
    t0 = time.monotonic()
    em = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, preexec_fn=E._no_core)
    time.sleep(delay)
    os.kill(em.pid, sig)
    res = finish(em, cmd, t0, 30)
    # 0.5 s of CPU after the signal plus ember's start, which takes up to
    # ~3 s on a loaded two-core machine; a lost signal leaves trapterm
    # waiting its 20 s.
    chk.check(res.elapsed < 8.0, "%s: ember is done within 8 s (0.5 s of CPU after the signal)" % name,
              res.describe())
    if not os.path.exists(marker) and res.rc == 128 + sig:
        print("(%s: the signal reached trapterm before its handler: it died of it)" % name)
        return
    got = open(marker).read().strip() if os.path.exists(marker) else None
    chk.check(got == str(int(sig)), "%s: the command received the signal (marker %r)" % (name, got),
              res.describe())
    chk.check(res.rc == 42, "%s: ember exits with the command's status 42 (got %s)" % (name, res.rc),
              res.describe())
    prof = E.load_profile(chk, out, res)
    if prof:
        after = prof.count(lambda f: "after_signal" in f)
        # 0.5 s of the thread's CPU at 199 Hz is ~100 samples; ask for 40.
        chk.check(after >= 40, "%s: %d samples in after_signal (>= 40 of ~100)" % (name, after), prof.top())


trapterm = E.target("trapterm")
for sig in (signal.SIGTERM, signal.SIGINT):
    for delay in (0.02, 0.08, 0.15, 0.3):
        early(sig, delay)
chk.finish()
