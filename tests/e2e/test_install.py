"""e2e.install: `cmake --install` into a temporary DESTDIR (prefix
/usr/local), then the installed files.

- the installed files are exactly bin/ember, the seven man pages in
  share/man/man1, share/bash-completion/completions/ember and
  share/zsh/vendor-completions/_ember (nothing else: no libraries, tests,
  examples);
- the installed `ember --version` says "ember VERSION" on its first line,
  VERSION being project()'s in CMakeLists.txt;
- `man -l` renders an installed page;
- the installed ember, converting a profile, opens no file in the source or
  build tree (strace; skipped loudly without strace).

usage: test_install.py --cmake CMAKE --source DIR --build DIR
"""
import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emberlib as E  # noqa: E402

PAGES = ["ember", "ember-record", "ember-convert", "ember-report", "ember-diff", "ember-top", "ember-dump"]
EXPECTED = (["usr/local/bin/ember",
             "usr/local/share/bash-completion/completions/ember",
             "usr/local/share/zsh/vendor-completions/_ember"]
            + ["usr/local/share/man/man1/%s.1" % p for p in PAGES])


def installed_files(root):
    found = []
    for d, _, files in os.walk(root):
        found += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(found)


def check_no_tree_files(chk, ember, workdir, trees):
    """Runs the installed ember convert under strace: no file of the trees opened."""
    if not shutil.which("strace"):
        print("SKIPPED PART: strace is not installed: files ember opens not checked", flush=True)
        return
    folded = os.path.join(workdir, "in.folded")
    with open(folded, "w") as f:
        f.write("main;work;inner 30\nmain;idle 10\n")
    log = os.path.join(workdir, "strace.log")
    r = E.run(["strace", "-f", "-qq", "-e", "trace=%file", "-o", log, ember, "convert", folded,
               "-o", os.path.join(workdir, "out.svg"), "-o", os.path.join(workdir, "out.speedscope.json")])
    if r.rc != 0 and "ptrace" in r.stderr:
        print("SKIPPED PART: strace cannot trace here: files ember opens not checked", flush=True)
        return
    chk.check(r.rc == 0, "the installed ember converts a profile", r.describe())
    text = open(log).read()
    opened = [l for l in text.splitlines() if any('"%s/' % t in l for t in trees)]
    chk.check(not opened, "the installed ember opens no file of the source or build tree", "\n".join(opened[:10]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cmake", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    a = p.parse_args()
    chk = E.Checker("e2e.install")
    work = E.tmpdir()
    dest = os.path.join(work, "dest")
    r = E.run([a.cmake, "--install", a.build, "--prefix", "/usr/local"], timeout=120,
              env=dict(os.environ, DESTDIR=dest))
    if not chk.check(r.rc == 0, "cmake --install into DESTDIR", r.describe() + "\n" + r.stdout):
        chk.finish()
    got = installed_files(dest)
    chk.check(got == sorted(EXPECTED), "the installed files are exactly the expected set",
              "unexpected: %s\nmissing: %s" % (sorted(set(got) - set(EXPECTED)), sorted(set(EXPECTED) - set(got))))

    cml = open(os.path.join(a.source, "CMakeLists.txt")).read()
    version = re.search(r"project\(ember VERSION ([0-9.]+)", cml).group(1)
    ember = os.path.join(dest, "usr/local/bin/ember")
    r = E.run([ember, "--version"])
    first = r.stdout.splitlines()[0] if r.stdout else ""
    chk.check(r.rc == 0 and first == "ember " + version, "installed ember --version: 'ember %s' first" % version,
              r.stdout)

    page = os.path.join(dest, "usr/local/share/man/man1/ember-record.1")
    if shutil.which("man") and os.path.exists(page):
        r = E.run(["man", "-l", page], quiet=True, env=dict(os.environ, MANPAGER="cat", PAGER="cat"))
        chk.check(r.rc == 0 and "--freq" in r.stdout.replace("\u2010", "-").replace("\u2212", "-"),
                  "man -l renders the installed ember-record(1)", r.describe())
    elif not shutil.which("man"):
        print("SKIPPED PART: man is not installed: the installed page not rendered", flush=True)

    trees = [os.path.realpath(a.source), os.path.realpath(a.build)]
    check_no_tree_files(chk, ember, work, trees)
    chk.finish()


main()
