"""wrapper: `ember record -- WRAPPER chain 1.0` through shell-script wrappers
that fork before they run the target, as a version manager's shim does
(pyenv's `python3` is a bash script that runs subshells, then execs):

- shim.sh: forty rounds of nested command substitutions and pipelines
  (processes forked by processes that were just forked), then `exec`;
- runner.sh: a subshell, then runs the target as its child and exits with
  its status after another subshell.

Each run (shim.sh runner.sh chain: both at once) must exit 0 with no
sanitizer report (the sanitized build stops at the first), and the target
must be profiled as directly: main;a;b;hot in >= 90% of the samples that
reached hot, and at least 50% of 99 Hz x the CPU time chain reports.
Forked processes whose mappings ember has not seen yet must cost nothing
but their own samples."""
import os
import emberlib as E

SHIM = """#!/bin/sh
i=0
while [ $i -lt 40 ]; do v=$(x=$( (echo "$i" | cat) | cat); echo "$x"); i=$((i + 1)); done
exec "$@"
"""
RUNNER = """#!/bin/sh
v=$( (echo 1 | cat) | cat )
"$@"
status=$?
v=$( (echo 2 | cat) | cat )
exit $status
"""

chk = E.Checker("e2e.wrapper")
d = E.tmpdir()
scripts = {}
for name, text in (("shim.sh", SHIM), ("runner.sh", RUNNER)):
    scripts[name] = os.path.join(d, name)
    with open(scripts[name], "w") as f:
        f.write(text)
    os.chmod(scripts[name], 0o755)

chain = E.target("chain")
for label, cmd in (("shim.sh", [scripts["shim.sh"], chain, "1.0"]),
                   ("runner.sh", [scripts["runner.sh"], chain, "1.0"]),
                   ("shim.sh runner.sh", [scripts["shim.sh"], scripts["runner.sh"], chain, "1.0"])):
    out = os.path.join(d, label.replace(" ", "_") + ".folded")
    res = E.record(["-o", out], cmd)
    chk.check(res.rc == 0, "%s: ember exits 0 (got %s)" % (label, res.rc), res.describe())
    chk.check("runtime error" not in res.stderr and "Sanitizer" not in res.stderr,
              "%s: no sanitizer report" % label, res.stderr)
    prof = E.load_profile(chk, out, res)
    E.check_format(chk, prof)
    hot = prof.count(lambda f: "hot" in f)
    good = prof.count(lambda f: E.chain_at_leaf(f, ("main", "a", "b", "hot"), ("mix", "tgt_now")))
    chk.check(hot > 0 and good >= 0.9 * hot,
              "%s: main;a;b;hot (+ inlined mix) in >= 90%% of the samples in hot: %d of %d" % (label, good, hot),
              prof.top())
    cpu = E.stdout_value(res, "cpu_seconds")
    chk.check(cpu is not None and hot >= 0.5 * 99 * cpu,
              "%s: the target's samples %d >= 50%% of 99 Hz x its %s CPU s" % (label, hot, cpu), res.stdout)
chk.finish()
