#!/usr/bin/env python3
"""README, docs/tinyc.1 and --help agree, and README's commands run as written.

usage: test_docs_cli.py SOURCE_DIR BUILD_DIR      (exit 0 pass, 1 fail)

1. Every subcommand's --help (tinyc, run, bench, tune, htree) lists its options under
   headings ("Run options:"); docs/tinyc.1 has a section of the same name in capitals
   ("RUN OPTIONS") for each, with the same options, and no other OPTIONS section.
2. Every tinyc command in README's code blocks uses only options its subcommand's --help
   lists.
3. The commands of README's "Using it" block (and "From tinygrad"'s when tinygrad is
   installed) run as written, from a temporary directory laid out as the README assumes
   (build/, examples/, python/), each must exit 0.  Commands that need a GPU (bench, tune,
   htree, --device=cuda) or a network (pip) are listed as not run.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SUBCOMMANDS = ["", "run", "bench", "tune", "htree"]
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
failures = []


def check(ok, what):
    """Record a failed check."""
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def help_sections(tinyc, sub):
    """{heading: set of options} of `tinyc SUB --help`."""
    p = subprocess.run([tinyc] + ([sub] if sub else []) + ["--help"], capture_output=True,
                       text=True)
    check(p.returncode == 0, f"tinyc {sub} --help exits 0")
    sections, cur = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"^(\w[\w ]* options):$", line)
        if m:
            cur = sections.setdefault(m.group(1).upper(), set())
        elif cur is not None and line.startswith("  -"):
            names = re.split(r"\s{2,}", line.strip())[0]     # the spelling column
            cur.update(n.split("=")[0] for n in OPTION.findall(names))
        elif not line.strip():
            cur = None
    return sections


def man_sections(path):
    """{SECTION: set of options} of the man page's OPTIONS sections (the .TP tags)."""
    sections, cur, tag = {}, None, False
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith(".SH "):
            title = line[4:].strip().strip('"')
            cur = sections.setdefault(title, set()) if title.endswith("OPTIONS") else None
            continue
        if line.startswith(".TP"):
            tag = True
            continue
        if tag and cur is not None:
            text = re.sub(r"\\f[BIRP]", " ", line).replace("\\-", "-").replace('"', " ")
            text = re.sub(r"^\.\w+\s*", "", text)
            cur.update(n.split("=")[0] for n in OPTION.findall(text))
        tag = False
    return sections


def readme_blocks(readme):
    """[(section heading, block language, lines)] of README's fenced code blocks."""
    blocks, heading, lang, lines = [], "", None, []
    for line in open(readme):
        line = line.rstrip("\n")
        if lang is None and line.startswith("## "):
            heading = line[3:].strip()
        elif line.startswith("```"):
            if lang is None:
                lang, lines = line[3:].strip(), []
            else:
                blocks.append((heading, lang, lines))
                lang = None
        elif lang is not None:
            lines.append(line)
    return blocks


def commands(lines):
    """The shell commands of a block: continued lines joined, python -c strings kept whole."""
    out, cur = [], ""
    for line in lines:
        cur = cur + "\n" + line if cur else line
        if cur.count("'") % 2 == 0 and not cur.endswith("\\"):
            if cur.strip() and not cur.lstrip().startswith("#"):
                out.append(cur)
            cur = ""
    return out


def tinyc_invocations(cmd):
    """[(subcommand, [options])] of every tinyc call in a shell command."""
    calls = []
    for part in re.split(r"[|;&]", cmd):
        words = part.split("#")[0].split()
        for i, w in enumerate(words):
            if w in ("$T", "build/tinyc", "tinyc"):
                rest = words[i + 1:]
                sub = rest[0] if rest and rest[0] in SUBCOMMANDS[1:] else ""
                opts = [r.split("=")[0] for r in rest if OPTION.fullmatch(r.split("=")[0])]
                calls.append((sub, opts))
                break
    return calls


def needs_gpu_or_network(cmd):
    """Why a README command cannot run here, or None."""
    if "--device=cuda" in cmd or re.search(r"\$T (bench|tune|htree)\b", cmd):
        return "needs a GPU"
    if re.search(r"\bpip install\b", cmd):
        return "installs from the network"
    return None


def run_readme(src, build, blocks):
    """Run the README's CPU commands in a temporary directory laid out as it assumes."""
    try:
        import tinygrad  # noqa: F401
        have_tinygrad = True
    except ImportError:
        have_tinygrad = False
    tmp = tempfile.mkdtemp(prefix="tinyc-readme-")
    try:
        os.symlink(os.path.abspath(build), os.path.join(tmp, "build"))
        for d in ("examples", "python"):
            os.symlink(os.path.join(src, d), os.path.join(tmp, d))
        env = dict(os.environ, TINYC_CACHE_DIR=os.path.join(tmp, "cache"))
        env.pop("TINYC_LIB", None)
        ran = 0
        for heading, lang, lines in blocks:
            if lang != "sh" or heading not in ("Using it", "From tinygrad"):
                continue
            if heading == "From tinygrad" and not have_tinygrad:
                print(f"not run: README '{heading}' (tinygrad is not installed)")
                continue
            prefix = "T=build/tinyc\n"
            for cmd in commands(lines):
                if cmd.startswith("T="):
                    continue
                why = needs_gpu_or_network(cmd)
                if why:
                    print(f"not run ({why}): {cmd}")
                    continue
                if re.search(r"\|\s*dot\b", cmd) and not shutil.which("dot"):
                    print(f"not run (graphviz's dot is not installed; tools/setup installs "
                          f"it): {cmd}")
                    continue
                p = subprocess.run(["bash", "-o", "pipefail", "-c", prefix + cmd], cwd=tmp,
                                   env=env, capture_output=True, text=True, timeout=600)
                ran += 1
                check(p.returncode == 0, f"README command exits 0: {cmd}\n{p.stdout[-2000:]}"
                                         f"{p.stderr[-2000:]}")
        print(f"ran {ran} README commands")
        check(ran >= 8, "README's 'Using it' has its CPU commands")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    tinyc = os.path.join(build, "tinyc")
    helps = {sub: help_sections(tinyc, sub) for sub in SUBCOMMANDS}
    man = man_sections(os.path.join(src, "docs", "tinyc.1"))

    # 1. --help headings and the man page's sections: the same options
    seen = set()
    for sub, sections in helps.items():
        check(sections, f"tinyc {sub} --help has option headings")
        for title, opts in sections.items():
            seen.add(title)
            check(title in man, f"docs/tinyc.1 has a section {title} (tinyc {sub} --help)")
            if title in man:
                check(opts == man[title], f"{title}: tinyc {sub} --help has "
                      f"{sorted(opts - man[title])} not in docs/tinyc.1; docs/tinyc.1 has "
                      f"{sorted(man[title] - opts)} not in --help")
    for title in man:
        check(title in seen, f"docs/tinyc.1 section {title} is a heading of some --help")

    # 2. README's tinyc commands use options their subcommand has
    blocks = readme_blocks(os.path.join(src, "README.md"))
    for _, lang, lines in blocks:
        for cmd in commands(lines):
            for sub, opts in tinyc_invocations(cmd):
                known = set().union(*helps[sub].values())
                for o in opts:
                    check(o in known, f"README: '{o}' of `tinyc {sub}` is in its --help: {cmd}")

    # 3. README's commands run as written
    run_readme(src, build, blocks)

    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
