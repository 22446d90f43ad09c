"""live_status: on a terminal, ember shows a one-line live status (elapsed
time, samples so far) while it records, erases it before the summary, and
`-q` shows nothing at all.  stderr is a pseudo-terminal here."""
import os
import pty
import re
import select
import subprocess
import time
import emberlib as E


def run_on_pty(opts, secs):
    master, slave = pty.openpty()
    out = os.path.join(E.tmpdir(), "live.folded")
    cmd = [E.ember(), "record", "-o", out] + opts + ["--", E.target("chain"), str(secs)]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    data = b""
    deadline = time.time() + 30
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=10)
    os.close(master)
    return p.returncode, data.decode("utf-8", "replace")


chk = E.Checker("e2e.live_status")
rc, text = run_on_pty([], 2.6)
print(repr(text[:2000]))
chk.check(rc == 0, "ember exits 0 (got %s)" % rc)
updates = re.findall(r"\rember: (\d+) s, (\d+) samples", text)
chk.check(len(updates) >= 2, "at least two live status updates during a 2.6 s run (%d)" % len(updates))
if len(updates) >= 2:
    secs = [int(u[0]) for u in updates]
    counts = [int(u[1]) for u in updates]
    chk.check(secs == sorted(secs) and counts == sorted(counts) and counts[-1] > 0,
              "elapsed time and sample counts only grow: %s" % updates)
chk.check("\r\x1b[K" in text, "the status line is erased before the summary")
chk.check("samples, " in text and "lost" in text, "the summary follows")

rc, text = run_on_pty(["-q"], 1.5)
chk.check(rc == 0 and text.strip() == "", "-q: nothing on the terminal (%r)" % text[:200])
chk.finish()
