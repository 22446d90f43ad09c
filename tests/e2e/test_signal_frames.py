"""signal_frames: samples inside a signal handler unwind through the kernel's
signal frame back into the interrupted code.

`sighandler` spends ~80% of its CPU time in on_sigprof -> handler_burn, called
on SIGPROF while main -> interrupted_loop spins; both loops count CPU time, so
the share holds on a loaded machine.  At least half of the samples must be in
the handler (and at least 60 of them: 1.5 s of CPU at 99 Hz gives ~150).  >= 90% of the samples whose leaf
is handler_burn must have interrupted_loop and main below the handler (the
stack continues past __restore_rt), in that order.
"""
import os
import emberlib as E

chk = E.Checker("e2e.signal_frames")
out = os.path.join(E.tmpdir(), "sig.folded")
res = E.record(["-o", out], [E.target("sighandler"), "1.5"])
chk.check(res.rc == 0, "ember exits 0 (got %s)" % res.rc, res.describe())
prof = E.load_profile(chk, out, res)


def through_signal_frame(frames):
    if "handler_burn" not in frames or "on_sigprof" not in frames:
        return False
    h = frames.index("on_sigprof")
    below = frames[:h]
    return ("main" in below and "interrupted_loop" in below
            and below.index("main") < below.index("interrupted_loop"))


in_handler = prof.count(lambda f: "handler_burn" in f)
good = prof.count(through_signal_frame)
total = prof.total
chk.check(in_handler >= 60 and in_handler >= 0.5 * total,
          "enough samples in the handler (%d of %d)" % (in_handler, total), prof.top())
chk.check(good >= 0.9 * in_handler,
          "handler stacks continue into interrupted_loop and main: %d of %d" % (good, in_handler), prof.top())
chk.finish()
