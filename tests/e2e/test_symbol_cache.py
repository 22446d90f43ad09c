"""The symbol cache on disk (docs/symbolization.md, "The symbol cache"), in an
XDG_CACHE_HOME of the test's own:
- the same stacks with the cache off, cold and warm: `ember dump --json` of
  a process sleeping in libc (its stack cannot change between the dumps)
  gives the same frames, byte for byte, with --no-symbol-cache, with an
  empty cache and with the cache the dump before filled; libc's frames
  carry file:line from libc6-dbg's debug file (compressed sections);
- record fills the cache (libc's decompressed debug file and its results,
  keyed by build-id) and a warm run symbolizes in under 60% of the cold
  run's CPU (the summary's "symbolization N ms CPU"; syslibs memchr spends
  its time in libc's memchr, named only by libc6-dbg's debug file); every
  run names the same libc function and has the same libc frames (the set of
  frames of libc.so.6 in the folded output may differ between runs, the
  names of the hottest may not);
- --no-symbol-cache writes nothing; entries overwritten with garbage are
  ignored and replaced; a cache folder that cannot be made (XDG_CACHE_HOME
  under /dev/null) or no HOME at all: the run works and says nothing about
  the cache; EMBER_SYMBOL_CACHE_MB=1: the folder stays under 1 MiB (libc's
  10 MB copy is not kept).
Skipped without libc6-dbg's debug file for this libc."""
import json
import os
import re
import subprocess
import time
import emberlib as E

chk = E.Checker("e2e.symbol_cache")
EMBER = E.ember()
SYSLIBS = E.target("syslibs")
SYM_RE = re.compile(r"symbolization (\d+) ms CPU")


def libc_build_id():
    out = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"], capture_output=True, text=True)
    if out.returncode != 0:
        out = subprocess.run(["sh", "-c", "readelf -n $(ldd /bin/true | awk '/libc.so/{print $3}')"],
                             capture_output=True, text=True)
    m = re.search(r"Build ID: ([0-9a-f]+)", out.stdout)
    return m.group(1) if m else None


BID = libc_build_id()
if not BID or not os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (BID[:2], BID[2:])):
    E.skip("no debug file for libc.so.6 (install libc6-dbg)")


def env_with(cache, **extra):
    env = dict(os.environ)
    env.pop("EMBER_SYMBOL_CACHE_MB", None)
    if cache is None:
        env.pop("XDG_CACHE_HOME", None)
    else:
        env["XDG_CACHE_HOME"] = cache
    env.update(extra)
    return env


def entries(cache):
    d = os.path.join(cache, "ember", "symbols")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def folder_size(cache):
    d = os.path.join(cache, "ember", "symbols")
    return sum(os.path.getsize(os.path.join(d, f)) for f in entries(cache))


# ---- dump: the same stack, byte for byte
sleeper = subprocess.Popen(["sleep", "300"])
time.sleep(0.3)
try:
    cache = E.tmpdir()
    dumps = []
    for label, opts in (("off", ["--no-symbol-cache"]), ("cold", []), ("warm", [])):
        res = E.run([EMBER, "dump", "-p", sleeper.pid, "--json"] + opts, env=env_with(cache), quiet=True)
        frames = None
        if res.rc == 0:
            try:
                frames = [t["frames"] for t in json.loads(res.stdout)["threads"]]
            except (ValueError, KeyError):
                pass
        chk.check(frames, "dump (%s): exit 0 and frames" % label, res.describe())
        dumps.append(json.dumps(frames, sort_keys=True))
        if label == "off":
            chk.check(entries(cache) == [], "dump --no-symbol-cache wrote nothing", entries(cache))
    chk.check(dumps[0] == dumps[1], "dump: cache cold gives the same frames as off", "\n".join(dumps[:2]))
    chk.check(dumps[0] == dumps[2], "dump: cache warm gives the same frames as off", "\n".join((dumps[0], dumps[2])))
    libc_lines = [f for fr in json.loads(dumps[0]) or [] for f in fr if f.get("module") == "libc.so.6" and f.get("line")]
    chk.check(libc_lines, "dump: libc frames with lines (libc6-dbg's DWARF)", dumps[0])
    chk.check(BID + ".debug" in entries(cache), "dump: libc's decompressed debug file is cached", entries(cache))
finally:
    sleeper.kill()
    sleeper.wait()


# ---- record: cold, warm
def record(cache, opts=(), label="", **envx):
    d = E.tmpdir()
    out = os.path.join(d, "p.folded")
    res = E.run([EMBER, "record", "-F", "499", "-o", out] + list(opts) + ["--", SYSLIBS, "memchr", "0.4"],
                env=env_with(cache, **envx), quiet=True, timeout=90)
    m = SYM_RE.search(res.stderr or "")
    ok = chk.check(res.rc == 0 and m and os.path.exists(out), "record %s: exit 0, a profile, the summary" % label,
                   res.describe())
    if not ok:
        return None, None, res
    prof = E.parse_folded(out)
    return int(m.group(1)), prof, res


def hottest(prof):
    c = prof.leaves()
    return max(c, key=c.get) if c else None


cache = E.tmpdir()
ms_off, p_off, _ = record(cache, ["--no-symbol-cache"], "off")
chk.check(entries(cache) == [], "record --no-symbol-cache wrote nothing", entries(cache))
ms_cold, p_cold, r_cold = record(cache, (), "cold")
ents = entries(cache)
chk.check(BID + ".debug" in ents and BID + ".sym" in ents,
          "record cold: libc's decompressed debug file and its results are in the cache", ents)
chk.check(not any(e.startswith(".tmp-") for e in ents), "no temporary file left", ents)
warm = [record(cache, (), "warm %d" % i) for i in range(3)]
if None not in (ms_off, ms_cold) and all(w[0] is not None for w in warm):
    best = min(w[0] for w in warm)
    print("symbolization ms: off %d, cold %d, warm %s" % (ms_off, ms_cold, [w[0] for w in warm]))
    chk.check(best < 0.6 * ms_cold or (ms_cold <= 3 and best <= ms_cold),
              "warm symbolization (best of 3: %d ms) under 60%% of cold (%d ms)" % (best, ms_cold),
              r_cold.describe())
    names = [hottest(p) for p in (p_off, p_cold) + tuple(w[1] for w in warm)]
    chk.check(len(set(names)) == 1 and names[0] and "memchr" in names[0],
              "every run's hottest leaf is libc's memchr, named alike: %s" % names)
    raw = [n for p in (p_off, p_cold) + tuple(w[1] for w in warm) for n in p.leaves()
           if n.startswith("[libc.so.6+")]
    chk.check(not raw, "no libc frame without a name, cache or not", raw)

# ---- damaged entries: ignored, replaced
d = os.path.join(cache, "ember", "symbols")
for e in entries(cache):
    with open(os.path.join(d, e), "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 64)
ms, prof, _ = record(cache, (), "damaged entries")
if prof:
    chk.check(hottest(prof) and "memchr" in hottest(prof), "damaged entries: memchr still named", prof.leaves())
ms2, _, _ = record(cache, (), "after the damage")
if ms2 is not None and ms_cold:
    chk.check(ms2 < 0.6 * ms_cold or ms_cold <= 3, "the damaged entries were replaced: warm again (%d ms)" % ms2)

# ---- no cache folder possible, no HOME
ms, prof, res = record("/dev/null", (), "XDG_CACHE_HOME=/dev/null")
if prof:
    chk.check("cache" not in res.stderr, "an unwritable cache says nothing", res.stderr)
    chk.check(hottest(prof) and "memchr" in hottest(prof), "unwritable cache: memchr named", prof.leaves())
env = env_with(None)
env.pop("HOME", None)
res = E.run([EMBER, "record", "-F", "499", "-o", os.path.join(E.tmpdir(), "x.folded"), "--", SYSLIBS, "memchr",
             "0.2"], env=env, quiet=True, timeout=90)
chk.check(res.rc == 0, "no HOME, no XDG_CACHE_HOME: record works", res.describe())

# ---- the size bound
small = E.tmpdir()
record(small, (), "EMBER_SYMBOL_CACHE_MB=1", EMBER_SYMBOL_CACHE_MB="1")
chk.check(0 < folder_size(small) <= 1 << 20 and BID + ".debug" not in entries(small),
          "EMBER_SYMBOL_CACHE_MB=1: results kept, the folder under 1 MiB (%d bytes)" % folder_size(small),
          entries(small))

chk.finish()
