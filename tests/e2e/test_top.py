"""top: `ember top` on a terminal (a tmux pane) and off one, against
tests/python/top_target.py, whose main thread spends nearly all its time in
hot_spin and whose "helper-thread" runs warm_step.

On the pane: hot_spin tops the table within 3 s; the sort keys order the
rows by the column they name; the view key switches merged -> python ->
native (native frames go, then Python's); the thread key shows the helper's
own functions; space freezes the table; a resize redraws it to the new
width; Ctrl-Z gives the terminal back until fg; q, Ctrl-C, SIGTERM and the
target's exit each end top with the main screen back, the cursor visible
and the terminal echoing again.  Off a
terminal: one plain table per interval, no escapes, and -o writes the run's
folded profile."""
import os
import re
import signal
import shutil
import subprocess
import time
import emberlib as E

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "python", "top_target.py")
PY_LABEL = re.compile(r" \(.+:\d+\)$")   # "qualname (file:first line)"
ROW = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)  (.*?)\s*$")

chk = E.Checker("e2e.top")
if not shutil.which("tmux"):
    E.skip("tmux is not installed: the full-screen checks need a terminal to read back")
E.args()
tmp = E.tmpdir()
SOCK = "ember-e2e-top-%d" % os.getpid()


def tmux(*a):
    return subprocess.run(["tmux", "-L", SOCK] + list(a), capture_output=True, text=True, timeout=10).stdout


def pane():
    return tmux("capture-pane", "-p", "-t", "top")


def mode():
    """(alternate screen on, cursor visible) of the pane."""
    a, c = tmux("display", "-p", "-t", "top", "#{alternate_on} #{cursor_flag}").split()
    return a == "1", c == "1"


def table(text):
    """(header, rows) of the table on the screen: rows as (own%, total%,
    own%all, total%all, own s, total s, function)."""
    lines = text.splitlines()
    head = "\n".join(l for l in lines[:3] if l.startswith(("ember top:", "samples/s")))
    rows = []
    for l in lines:
        m = ROW.match(l)
        if m:
            rows.append(tuple(float(x) for x in m.groups()[:6]) + (m.group(7),))
    return head, rows


def wait_for(pred, timeout):
    """The screen once pred(text) holds, or None after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        text = pane()
        if pred(text):
            return text
        if time.monotonic() > end:
            return None
        time.sleep(0.1)


def key(k):
    tmux("send-keys", "-t", "top", k)


def launch(cmdline):
    tmux("send-keys", "-t", "top", "clear", "Enter")
    time.sleep(0.2)
    tmux("send-keys", "-t", "top", cmdline, "Enter")


def ended(marker, timeout=8):
    return wait_for(lambda t: re.search(r"(?:^|\$ )%s=\d+" % marker, t, re.M), timeout)


def check_restored(what, marker):
    text = ended(marker)
    chk.check(text is not None, "%s ends top: the shell runs the next command" % what, pane())
    alt, cursor = mode()
    chk.check(not alt and cursor, "%s: main screen back, cursor visible (alternate %s, cursor %s)"
              % (what, alt, cursor))
    m = re.search(r"(?:^|\$ )%s=(\d+)" % marker, text or "", re.M)
    return int(m.group(1)) if m else None


def top_label(text):
    _, rows = table(text)
    return rows[0][6] if rows else ""


def ember_top(opts, secs, pidfile=""):
    return "%s top %s -- %s %s %s %s" % (E.ember(), opts, E.PYTHON, WORKLOAD, secs, pidfile)


tmux("-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", "160", "-y", "50", "env", "PS1=$ ", "sh")
try:
    # ---- the live table, its keys, q ----
    t0 = time.monotonic()
    # alone: `ember top ...; echo` would echo as soon as Ctrl-Z stops it;
    # its status is asked for after q
    launch(ember_top("", 40))
    text = wait_for(lambda t: top_label(t).startswith("hot_spin ("), 3.0)
    chk.check(text is not None, "hot_spin tops the table within 3 s (%.1f s)" % (time.monotonic() - t0), pane())
    alt, cursor = mode()
    chk.check(alt and not cursor, "while it runs: alternate screen, cursor hidden")

    # (each check waits for a screen that shows the whole new frame: a
    # capture can catch the terminal half way through a redraw)
    def by_total(t):
        rows = table(t)[1]
        own = [r[0] for r in rows]
        return ("sort total |" in t and rows and [r[1] for r in rows] == sorted([r[1] for r in rows], reverse=True)
                and own != sorted(own, reverse=True))

    def by_own(t):
        rows = table(t)[1]
        return ("sort own |" in t and rows and [r[0] for r in rows] == sorted([r[0] for r in rows], reverse=True)
                and rows[0][6].startswith("hot_spin ("))

    def python_view(t):
        rows = table(t)[1]
        return ("view python |" in t and rows and all(PY_LABEL.search(r[6]) for r in rows)
                and rows[0][6].startswith("hot_spin ("))

    def native_view(t):
        rows = table(t)[1]
        return ("view native |" in t and rows and not any(PY_LABEL.search(r[6]) for r in rows)
                and any(r[6].startswith("_PyEval_EvalFrameDefault") for r in rows))

    key("2")
    chk.check(wait_for(by_total, 2) is not None, "key 2: rows by TOTAL% (the interval's), no longer by OWN%", pane())
    key("1")
    chk.check(wait_for(by_own, 2) is not None, "key 1: rows by OWN%, hot_spin first", pane())
    key("v")
    chk.check(wait_for(python_view, 2) is not None, "key v: Python view, Python functions only, hot_spin first",
              pane())
    key("v")
    chk.check(wait_for(native_view, 2) is not None,
              "key v again: native view, no Python function, the eval loop shown", pane())
    key("v")
    text = wait_for(lambda t: "view merged |" in t and any(PY_LABEL.search(r[6]) for r in table(t)[1])
                    and any(not PY_LABEL.search(r[6]) for r in table(t)[1]), 2)
    chk.check(text is not None, "key v a third time: merged again, Python and native functions", pane())

    for _ in range(6):
        key("t")
        if wait_for(lambda t: "helper-thread" in t.splitlines()[0], 0.5):
            break
    text = wait_for(lambda t: "helper-thread" in t.splitlines()[0] and top_label(t).startswith("warm_step ("), 2)
    chk.check(text is not None and "hot_spin" not in text,
              "key t: the helper thread alone, warm_step first, no hot_spin", pane())
    for _ in range(6):
        key("t")
        if wait_for(lambda t: "thread all" in t.splitlines()[0], 0.5):
            break
    chk.check("thread all" in pane().splitlines()[0], "key t cycles back to every thread")

    key(" ")
    a = wait_for(lambda t: "PAUSED" in t, 2)
    time.sleep(1.6)
    b = pane()
    chk.check(a is not None and table(a) == table(b), "space: the table stays as it was (paused)", b)
    key(" ")
    chk.check(wait_for(lambda t: "PAUSED" not in t and "ember top:" in t, 2) is not None, "space again: resumed")

    tmux("resize-window", "-t", "top", "-x", "100", "-y", "30")
    text = wait_for(lambda t: "ember top:" in t and all(len(l) <= 100 for l in t.splitlines())
                    and len(t.splitlines()) <= 30, 3)
    chk.check(text is not None, "a resize to 100x30 redraws the table within the new size", pane())
    tmux("resize-window", "-t", "top", "-x", "160", "-y", "50")

    key("C-z")
    text = wait_for(lambda t: re.search(r"Stopped.*\n\$ *$", t.rstrip() + " ", re.S), 3)
    chk.check(text is not None and mode() == (False, True),
              "Ctrl-Z: main screen and cursor back while stopped, the shell's prompt", pane())
    tmux("send-keys", "-t", "top", "fg", "Enter")
    text = wait_for(lambda t: "ember top:" in t and "keys:" in t, 3)
    chk.check(text is not None and mode() == (True, False), "fg: the full-screen table again", pane())

    key("q")
    end = time.monotonic() + 5
    while mode() != (False, True) and time.monotonic() < end:
        time.sleep(0.1)
    tmux("send-keys", "-t", "top", "echo EXIT-Q=$?", "Enter")
    rc = check_restored("q", "EXIT-Q")
    chk.check(rc == 0, "q exits 0 (got %s)" % rc)
    tmux("send-keys", "-t", "top", "echo ECHO-$((40+2))", "Enter")
    chk.check(wait_for(lambda t: "echo ECHO-$((40+2))" in t and "\nECHO-42" in t, 3) is not None,
              "after q the terminal echoes and reads lines again", pane())

    # ---- Ctrl-C ----
    launch(ember_top("", 40) + "; echo EXIT-C=$?")
    chk.check(wait_for(lambda t: "ember top:" in t, 8) is not None, "second run shows its table", pane())
    key("C-c")
    rc = check_restored("Ctrl-C", "EXIT-C")
    chk.check(rc not in (None, 0), "Ctrl-C: the command's status, not 0 (got %s)" % rc)

    # ---- SIGTERM to ember ----
    pidfile = os.path.join(tmp, "pid")
    launch(ember_top("", 40, pidfile) + "; echo EXIT-T=$?")
    chk.check(wait_for(lambda t: "ember top:" in t and os.path.exists(pidfile), 8) is not None,
              "third run shows its table", pane())
    ember_pid = None
    try:
        with open("/proc/%s/status" % open(pidfile).read().strip()) as f:
            ember_pid = int(re.search(r"^PPid:\s*(\d+)", f.read(), re.M).group(1))
        with open("/proc/%d/comm" % ember_pid) as f:
            chk.check(f.read().strip() == "ember", "the workload's parent is ember")
    except (OSError, AttributeError, ValueError) as e:
        chk.check(False, "find ember's pid from the workload's: %s" % e)
    if ember_pid:
        os.kill(ember_pid, signal.SIGTERM)
    check_restored("SIGTERM", "EXIT-T")

    # ---- the target exits ----
    launch(ember_top("", 2.5) + "; echo EXIT-E=$?")
    rc = check_restored("the target's exit", "EXIT-E")
    chk.check(rc == 0, "the target's exit status 0 is top's (got %s)" % rc)
    chk.check("hot_spin (" in pane(), "its last table stays on the main screen", pane())
finally:
    tmux("kill-server")

# ---- off a terminal ----
folded = os.path.join(tmp, "run.folded")
res = E.run([E.ember(), "top", "--interval", "0.5", "-o", folded, "--", E.PYTHON, WORKLOAD, "2.5"], timeout=60)
tables = res.stdout.split("ember top:")[1:]
chk.check(res.rc == 0, "plain mode exits 0", res.describe())
chk.check(len(tables) >= 3, "plain mode: a table per 0.5 s interval (%d tables in 2.5 s)" % len(tables))
chk.check("\x1b" not in res.stdout, "plain mode: no escape sequences")
# The full intervals' tables (not the last, cut short at the target's exit):
# ~47 samples each, hot_spin ~25 % of them by its own time and the next
# function ~12 %, so one table in many may put another first by chance.
full = [table("ember top:" + t)[1] for t in tables[1:-1]]
chk.check(any(rows and rows[0][6].startswith("hot_spin (") for rows in full),
          "plain mode: hot_spin tops a full interval's table (%d of %d)"
          % (sum(1 for rows in full if rows and rows[0][6].startswith("hot_spin (")), len(full)), res.stdout)
# (the last table, at the target's exit, may cover a few samples only)
last = table("ember top:" + tables[-1])[1] if tables else []
chk.check(last and max(last, key=lambda r: r[2])[6].startswith("hot_spin ("),
          "plain mode: the last table has hot_spin first by own% since the start", res.stdout)
counts = {}
if os.path.exists(folded):
    for line in open(folded):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(n)
total = sum(counts.values())
# (the leaf may be the interpreter's C under hot_spin's line: int arithmetic, the allocator)
hot = sum(n for s, n in counts.items()
          if [f for f in s.split(";") if re.match(r".* \(.+:\d+\)$", f)][-1:] and
          [f for f in s.split(";") if re.match(r".* \(.+:\d+\)$", f)][-1].startswith("hot_spin ("))
chk.check(total > 0 and hot / total > 0.5,
          "-o: the folded profile of the run, hot_spin the innermost Python frame of most samples (%d of %d)" %
          (hot, total))
res = E.run([E.ember(), "top", "--interval", "0"], quiet=True)
chk.check(res.rc == 64 and len(res.stderr_lines()) == 2, "a bad --interval: exit 64, one error line and the hint",
          res.describe())
chk.finish()
