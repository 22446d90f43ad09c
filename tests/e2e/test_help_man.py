"""e2e.help_man: every command's --help and man page against its option
table (the getopt_long tables of cli/, read by optlib.py).

- every option a command accepts is named in `ember CMD --help` and in
  build/man/ember-CMD.1;
- every option the help or the man page lists as an item, and every --word
  either of them names (but for a profiled command's own, after " -- "),
  is one the command accepts;
- each man page has the sections NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
  EXIT STATUS, SEE ALSO (and EXAMPLES when the help has examples), and
  groff formats it without a warning (groff -ww); `man -l` renders it.

usage: test_help_man.py --ember E --source DIR --build DIR
"""
import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emberlib as E  # noqa: E402
import optlib  # noqa: E402

SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"]


def man_text(path):
    """The man page's words as plain text: troff escapes undone."""
    text = open(path).read()
    text = text.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    text = re.sub(r"\\f[BIRP]", "", text)
    # an item's tag (the line after .TP) indented as in the help text
    return re.sub(r"^\.TP\n(.*)$", r"  \1", text, flags=re.M)


def check_names(chk, cmd, where, text, table):
    accepted = table["long"] | table["short"]
    for opt in sorted(accepted):
        chk.check(optlib.mentioned(text, opt), "%s: %s names %s" % (cmd, where, opt))
    for opt in sorted(optlib.long_options_named(text)):
        ok = opt in table["long"] or (opt.endswith("-") and any(o.startswith(opt) for o in table["long"]))
        chk.check(ok, "%s: %s names %s, which the command accepts" % (cmd, where, opt))
    for opt in sorted(optlib.item_options(text)):
        chk.check(opt in accepted, "%s: %s lists %s, which the command accepts" % (cmd, where, opt))


def check_man_page(chk, cmd, page, has_examples):
    src = open(page).read()
    heads = [h.strip('"') for h in re.findall(r"^\.SH (.*)$", src, re.M)]
    want = SECTIONS[:-1] + (["EXAMPLES"] if has_examples else []) + SECTIONS[-1:]
    for s in want:
        chk.check(s in heads, "%s: man page has %s" % (cmd, s), "sections: %s" % heads)
    if shutil.which("groff"):
        r = E.run(["groff", "-ww", "-man", "-z", page], quiet=True)
        chk.check(r.rc == 0 and not r.stderr.strip(), "%s: groff -ww formats the page without a warning" % cmd,
                  r.describe())
    else:
        print("SKIPPED PART: groff is not installed: %s's man page not formatted" % cmd, flush=True)
    if shutil.which("man"):
        r = E.run(["man", "-l", page], quiet=True, env=dict(os.environ, MANPAGER="cat", PAGER="cat"))
        chk.check(r.rc == 0 and "SYNOPSIS" in r.stdout, "%s: man -l renders the page" % cmd, r.describe())
    else:
        print("SKIPPED PART: man is not installed: %s's page not rendered" % cmd, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    a = p.parse_args()
    chk = E.Checker("e2e.help_man")
    tables = optlib.option_tables(a.source)
    for cmd, table in sorted(tables.items()):
        argv = [a.ember, "--help"] if cmd == "ember" else [a.ember, cmd, "--help"]
        r = E.run(argv, quiet=True)
        chk.check(r.rc == 0 and r.stdout.startswith("usage: ember"), "%s --help: exit 0, a usage line" % cmd,
                  r.describe())
        check_names(chk, cmd, "--help", r.stdout, table)
        name = "ember" if cmd == "ember" else "ember-" + cmd
        page = os.path.join(a.build, "man", name + ".1")
        if not chk.check(os.path.exists(page), "%s: man page %s built" % (cmd, page)):
            continue
        check_names(chk, cmd, "man page", man_text(page), table)
        check_man_page(chk, cmd, page, re.search(r"^Examples?:", r.stdout, re.M) is not None)
    chk.finish()


main()
