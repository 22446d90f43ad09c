"""e2e.completion: the bash completion (build/completion/ember.bash), sourced
in bash and asked as <TAB> would ask it.

- `ember rec<TAB>` gives record; `ember <TAB>` every command;
- `ember record --fr<TAB>` gives --freq; `ember diff --re<TAB>` gives
  --rename and --reverse-view;
- `ember CMD -<TAB>` offers only options CMD accepts (its getopt_long table,
  optlib.py), and every option its --help lists as an item;
- after `--` the words are the profiled command's: no ember option offered;
- the zsh completion parses (zsh -n) and, run with compsys's functions
  replaced by ones that print what they are given, offers every command,
  each command's options (the same rule as bash's) and, after `--`, the
  profiled command's own completion; where zsh is installed (make test
  installs it).

usage: test_completion.py --ember E --source DIR --build DIR
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emberlib as E  # noqa: E402
import optlib  # noqa: E402

COMPLETE = r'''
source "$1"; shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
_ember
printf '%s\n' "${COMPREPLY[@]}"
'''


def complete(script, words):
    """The words bash would offer for the last of words (the one at the cursor)."""
    r = E.run(["bash", "--norc", "--noprofile", "-c", COMPLETE, "complete", script] + words, quiet=True)
    if r.rc != 0:
        print(r.describe(), flush=True)
    return set(l for l in r.stdout.splitlines() if l)


def zsh_offers(script, words):
    """What the zsh completion function offers for WORDS (the last one being
    completed), with compsys's functions replaced by ones that print what
    they are given: compadd's words, _describe's array's names, "<files>"
    for _files and "<normal>" for _normal.  (The prefix filtering is
    compsys's own: everything offered is printed.)"""
    stubs = (
        'compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }\n'
        '_describe() { local a; for a in ${(P)4}; do print -r -- ${a%%:*}; done; }\n'
        '_files() { print "<files>"; }\n'
        '_normal() { print "<normal>"; }\n'
    )
    quoted = " ".join("'%s'" % w for w in words)
    body = stubs + "words=(%s); CURRENT=%d; PREFIX='%s'\n" % (quoted, len(words), words[-1])
    body += "_ember() { source '%s'; }\n_ember\n" % script
    r = E.run(["zsh", "-f", "-c", body], quiet=True)
    return {l for l in r.stdout.splitlines() if l}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    a = p.parse_args()
    if not shutil.which("bash"):
        E.skip("bash is not installed")
    script = os.path.join(a.build, "completion", "ember.bash")
    if not os.path.exists(script):
        E.fail_now("%s was not built" % script)
    chk = E.Checker("e2e.completion")
    tables = optlib.option_tables(a.source)
    commands = sorted(c for c in tables if c != "ember")

    got = complete(script, ["ember", "rec"])
    chk.check(got == {"record"}, "ember rec<TAB> -> record", got)
    got = complete(script, ["ember", ""])
    chk.check(got == set(commands), "ember <TAB> -> every command", got)
    got = complete(script, ["ember", "record", "--fr"])
    chk.check(got == {"--freq"}, "ember record --fr<TAB> -> --freq", got)
    got = complete(script, ["ember", "diff", "a.ember", "--re"])
    chk.check(got == {"--rename", "--reverse-view"}, "ember diff a.ember --re<TAB> -> --rename --reverse-view", got)
    got = complete(script, ["ember", "record", "--", "./app", "--fr"])
    chk.check(not got, "after --, the profiled command's options are not ember's", got)

    for cmd in ["ember"] + commands:
        words = ["ember", "-"] if cmd == "ember" else ["ember", cmd, "-"]
        got = complete(script, words)
        accepted = tables[cmd]["long"] | tables[cmd]["short"]
        chk.check(got and got <= accepted, "ember %s -<TAB>: only options it accepts" % cmd,
                  "offered, not accepted: %s" % sorted(got - accepted))
        argv = [a.ember, "--help"] if cmd == "ember" else [a.ember, cmd, "--help"]
        listed = optlib.item_options(E.run(argv, quiet=True).stdout)
        chk.check(listed <= got, "ember %s -<TAB>: every option its --help lists" % cmd,
                  "not offered: %s" % sorted(listed - got))

    zsh = os.path.join(a.build, "completion", "_ember")
    if shutil.which("zsh"):
        r = E.run(["zsh", "-n", zsh], quiet=True)
        chk.check(r.rc == 0, "the zsh completion parses", r.describe())
        got = zsh_offers(zsh, ["ember", ""])
        chk.check(got == set(commands), "zsh: ember <TAB> -> every command", got)
        for cmd in commands:
            got = zsh_offers(zsh, ["ember", cmd, "-"])
            accepted = tables[cmd]["long"] | tables[cmd]["short"]
            listed = optlib.item_options(E.run([a.ember, cmd, "--help"], quiet=True).stdout)
            chk.check(listed <= got <= accepted,
                      "zsh: ember %s -<TAB> -> options it accepts, every one its --help lists" % cmd,
                      "offered, not accepted: %s; listed, not offered: %s"
                      % (sorted(got - accepted), sorted(listed - got)))
        got = zsh_offers(zsh, ["ember", "record", "--", "./app", "-"])
        chk.check(got == {"<normal>"}, "zsh: after --, the profiled command's own completion", got)
    else:
        print("SKIPPED PART: zsh is not installed: %s not checked" % zsh, flush=True)
    chk.finish()


main()
