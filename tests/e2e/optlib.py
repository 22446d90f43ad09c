"""The options each `ember` command accepts, read from the C source of cli/:
the getopt_long tables (struct option arrays, with the OUTPUT_LONGOPTS
macro of cli/cli.h expanded) and short-option strings are the truth the
help texts, man pages and completions are checked against.

option_tables(source_dir) -> {command: {"long": set("--freq", ...),
                                        "short": set("-F", ...)}}
The table of a command is found by the function that holds it (TABLES);
a table in cli/ that TABLES does not name is an error, so that a new
command cannot go unchecked.
"""
import os
import re

# (file, function holding the table and its getopt_long call) -> command
TABLES = {
    ("options.c", "options_parse_record"): "record",
    ("convert_cmd.c", "cmd_convert"): "convert",
    ("convert_cmd.c", "cmd_report"): "report",
    ("diff_cmd.c", "cmd_diff"): "diff",
    ("top_cmd.c", "parse_top"): "top",
    ("dump_cmd.c", "parse"): "dump",
}

_FUNC = re.compile(r"^[a-z][^\n;]*?\b(\w+)\(([^;{]*)\)\s*\{", re.M)
_TABLE = re.compile(r"struct option \w+\[\] = \{(.*?)\n\s*\};", re.S)
_NAME = re.compile(r'\{\s*"([^"]+)"\s*,')
_SHORTS = re.compile(r'getopt_long\([^,]+,[^,]+,\s*"([^"]*)"')


def _output_longopts(cli_h):
    m = re.search(r"#define OUTPUT_LONGOPTS((?:.*\\\n)*.*)", cli_h)
    return set(_NAME.findall(m.group(1)))


def _function_at(text, pos):
    name = None
    for m in _FUNC.finditer(text):
        if m.start() > pos:
            break
        name = m.group(1)
    return name


def _shorts(optstring):
    return {"-" + c for c in optstring if c.isalnum()}


def option_tables(source_dir):
    cli = os.path.join(source_dir, "cli")
    output = _output_longopts(open(os.path.join(cli, "cli.h")).read())
    tables = {}
    for fname in sorted(os.listdir(cli)):
        if not fname.endswith(".c"):
            continue
        text = open(os.path.join(cli, fname)).read()
        for m in _TABLE.finditer(text):
            func = _function_at(text, m.start())
            cmd = TABLES.get((fname, func))
            if cmd is None:
                raise RuntimeError("an option table in cli/%s (%s) that optlib.TABLES does not name"
                                   % (fname, func))
            names = set(_NAME.findall(m.group(1)))
            if "OUTPUT_LONGOPTS" in m.group(1):
                names |= output
            shorts = _SHORTS.search(text, m.end())
            tables[cmd] = {"long": {"--" + n for n in names},
                           "short": _shorts(shorts.group(1)) if shorts else set()}
    missing = set(TABLES.values()) - set(tables)
    if missing:
        raise RuntimeError("no option table found for %s" % ", ".join(sorted(missing)))
    # ember itself compares argv[1] with its options (cli/main.c).
    main = open(os.path.join(cli, "main.c")).read()
    flags = set(re.findall(r'strcmp\(cmd, "(-[^"]*)"\)', main))
    tables["ember"] = {"long": {f for f in flags if f.startswith("--")},
                       "short": {f for f in flags if not f.startswith("--")}}
    return tables


def mentioned(text, opt):
    """Whether option opt ("--freq", "-F") is named in text as a word."""
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), text) is not None


def long_options_named(text):
    """Every --word in text (a name ending in '-', from "--iterations-*",
    is the prefix it stands for), but for the words after " -- " on a line:
    a profiled command's own."""
    names = set()
    for line in text.splitlines():
        names |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line.split(" -- ")[0]))
    return names


def item_options(help_text):
    """The options the items of a help text list (lines "  -F, --freq HZ
    description" indented less than 8 columns): long and short."""
    found = set()
    for line in help_text.splitlines():
        m = re.match(r"^ {1,7}(-\S.*?)(?:  +|$)", line)
        if m:
            found |= set(re.findall(r"(?<![\w-])--?[A-Za-z0-9][A-Za-z0-9-]*", m.group(1)))
    return found
