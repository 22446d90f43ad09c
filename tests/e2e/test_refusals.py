"""refusals: targets ember cannot stop or profile, each told as it is.

1. `ember dump -p PID` of a process another tracer holds (a helper that
   PTRACE_SEIZEs it, as strace -p or gdb would): exit 77, one stderr line
   saying it is already being traced and by which pid (not just "not
   permitted").
2. `ember dump -p 2` and `ember record -p 2` (kthreadd, a kernel thread):
   exit 69, one stderr line saying it is a kernel thread (not "the process
   has ended", not a profile of 0 samples with exit 0)."""
import os
import subprocess
import sys
import time
import emberlib as E

chk = E.Checker("e2e.refusals")
d = E.tmpdir()

# A helper that seizes pid (argv[1]) without stopping it, says so, then
# holds it until its stdin closes.
TRACER = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE = 0x4206
if libc.ptrace(PTRACE_SEIZE, int(sys.argv[1]), None, None) != 0:
    print("seize failed: errno %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
print("seized", flush=True)
sys.stdin.read()
"""


def one_line(res, what):
    lines = res.stderr_lines()
    chk.check(len(lines) == 1 and lines[0].startswith("ember"), "%s: exactly one stderr line" % what, res.stderr)
    return lines[0] if lines else ""


# 1. dump of a traced process
sleeper = subprocess.Popen(["sleep", "60"])
tracer = subprocess.Popen([sys.executable, "-c", TRACER, str(sleeper.pid)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
try:
    said = tracer.stdout.readline().strip()
    if said != "seized":
        E.skip("cannot ptrace a child here (%s)" % said)
    res = E.run([E.ember(), "dump", "-p", sleeper.pid], timeout=30)
    chk.check(res.rc == 77, "dump of a traced process exits 77 (got %s)" % res.rc, res.describe())
    line = one_line(res, "traced")
    chk.check("being traced by pid %d" % tracer.pid in line,
              "the message says it is being traced, by pid %d" % tracer.pid, line)
finally:
    tracer.stdin.close()
    tracer.wait()
    sleeper.kill()
    sleeper.wait()

# 2. a kernel thread
with open("/proc/2/stat") as f:
    stat = f.read()
flags = int(stat[stat.rindex(")") + 2:].split()[6])
if not flags & 0x00200000:
    E.skip("pid 2 is not a kernel thread here (a pid namespace of its own?)")
res = E.run([E.ember(), "dump", "-p", "2"], timeout=30)
chk.check(res.rc == 69, "dump -p 2 exits 69 (got %s)" % res.rc, res.describe())
line = one_line(res, "dump -p 2")
chk.check("kernel thread" in line and "ended" not in line, "dump -p 2 says it is a kernel thread", line)

out = os.path.join(d, "k.folded")
t0 = time.monotonic()
res = E.record(["-d", "1", "-o", out, "-p", "2"], timeout=30)
chk.check(res.rc == 69, "record -p 2 exits 69 (got %s)" % res.rc, res.describe())
line = one_line(res, "record -p 2")
chk.check("kernel thread" in line, "record -p 2 says it is a kernel thread", line)
chk.check(not os.path.exists(out), "record -p 2 writes no profile")
chk.finish()
