"""exit codes and error messages (docs/cli.md "Exit status").
- command exits 3                 -> ember exits 3;
- command not found               -> 127, exactly one stderr line `ember: ...` naming it;
- command not executable          -> 126, exactly one stderr line `ember: ...`;
- usage errors (-F 0, -F abc, -F above perf_event_max_sample_rate,
  --stack-size 10001 / 100000 / 56, -d abc, unknown option, missing command,
  both -p and a command, unknown --format)
                                  -> 64, first stderr line starts with
                                     `ember:`, at most one more (usage hint),
                                     no sanitizer report;
- unknown subcommand              -> 64, first line `ember: ...` names it;
- -p of a pid that does not exist -> 69;
- -o /nonexistent-dir/x.folded    -> 73 and the message names the file."""
import os
import emberlib as E

chk = E.Checker("e2e.exit_codes")
d = E.tmpdir()
chain = E.target("chain")
out = os.path.join(d, "x.folded")


def no_sanitizer(res, what):
    bad = [l for l in res.stderr.splitlines() if "Sanitizer" in l or "runtime error" in l]
    chk.check(not bad, "%s: no sanitizer report" % what, "\n".join(bad[:5]))


res = E.record(["-o", out], [E.target("crash"), "exit", "0.2", "3"])
chk.check(res.rc == 3, "command exits 3 -> ember exits 3 (got %s)" % res.rc)

for what, cmd, want in (
        ("command not found (path)", ["/nonexistent-ember-e2e/prog"], 127),
        ("command not found (PATH lookup)", ["ember-e2e-no-such-command"], 127)):
    res = E.record(["-o", out], cmd)
    lines = res.stderr_lines()
    chk.check(res.rc == want, "%s -> %d (got %s)" % (what, want, res.rc))
    chk.check(len(lines) == 1 and lines[0].startswith("ember:") and cmd[0] in lines[0],
              "%s: exactly one stderr line `ember: ...` naming %s" % (what, cmd[0]), res.stderr)
    no_sanitizer(res, what)

noexec = os.path.join(d, "noexec.sh")
with open(noexec, "w") as f:
    f.write("#!/bin/sh\nexit 0\n")
os.chmod(noexec, 0o644)
res = E.record(["-o", out], [noexec])
lines = res.stderr_lines()
chk.check(res.rc == 126, "non-executable command -> 126 (got %s)" % res.rc)
chk.check(len(lines) == 1 and lines[0].startswith("ember:"),
          "non-executable: exactly one stderr line `ember: ...`", res.stderr)

try:
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        max_rate = int(f.read())
except OSError:
    max_rate = 100000
rec = ["record"]
tail = ["--", chain, "0.1"]
usage = [
    ("-F 0", rec + ["-F", "0", "-o", out] + tail),
    ("-F abc", rec + ["-F", "abc", "-o", out] + tail),
    ("-F max_rate+1", rec + ["-F", str(max_rate + 1), "-o", out] + tail),
    ("--stack-size 10001", rec + ["--stack-size", "10001", "-o", out] + tail),
    ("--stack-size 100000", rec + ["--stack-size", "100000", "-o", out] + tail),
    ("--stack-size 56", rec + ["--stack-size", "56", "-o", out] + tail),
    ("-d abc", rec + ["-d", "abc", "-o", out] + tail),
    ("unknown option", rec + ["--no-such-option", "-o", out] + tail),
    ("missing command", rec + ["-o", out]),
    ("missing command after --", rec + ["-o", out, "--"]),
    ("-p and a command", rec + ["-p", str(os.getpid()), "-d", "0.5", "-o", out] + tail),
    ("unknown --format", rec + ["--format", "no-such-format", "-o", out] + tail),
]
for what, argv in usage:
    res = E.run([E.ember()] + argv, timeout=30)
    lines = res.stderr_lines()
    chk.check(res.rc == 64, "usage error %s -> 64 (got %s)" % (what, res.rc))
    chk.check(1 <= len(lines) <= 2 and lines[0].startswith("ember:"),
              "usage error %s: one `ember: ...` line (+ at most a usage hint)" % what, res.stderr)
    no_sanitizer(res, what)

# An unknown subcommand may be followed by the command list: only the first
# line is pinned down.
res = E.run([E.ember(), "no-such-subcommand"], timeout=30)
lines = res.stderr_lines()
chk.check(res.rc == 64, "unknown subcommand -> 64 (got %s)" % res.rc)
chk.check(lines[:1] and lines[0].startswith("ember:") and "no-such-subcommand" in lines[0],
          "unknown subcommand: first line `ember: ...` names it", res.stderr)
no_sanitizer(res, "unknown subcommand")

pid = 999999
while os.path.exists("/proc/%d" % pid):
    pid -= 1
res = E.record(["-p", str(pid), "-d", "1", "-o", out], timeout=30)
chk.check(res.rc == 69, "-p %d (no such process) -> 69 (got %s)" % (pid, res.rc))
chk.check(res.stderr_lines()[:1] and res.stderr_lines()[0].startswith("ember:"),
          "-p nonexistent: message starts with `ember:`", res.stderr)

bad_out = "/nonexistent-dir/x.folded"
res = E.record(["-o", bad_out], [chain, "0.2"])
chk.check(res.rc == 73, "-o %s -> 73 (got %s)" % (bad_out, res.rc))
chk.check(bad_out in res.stderr, "the error names %s" % bad_out, res.stderr)
chk.finish()
