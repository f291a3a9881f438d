#!/usr/bin/env python3
"""The uop verifier is the single gate (issue 18): every graph of the test corpus (tests/,
examples/) that the uop verifier accepts must pass every later stage's verifier too
(`--verify-each` through CUDA text), with its symbols unbound and bound.

  verifier_agreement.py TINYC SOURCE_DIR

With unbound symbols two diagnostics of later stages are allowed, because they are
questions the uop verifier cannot answer without values (docs/reliability.md):
AccessOutOfBounds (Poly-View proves a SHRINK leaves a symbolic axis for some values) and
SymbolicReshape (a RESHAPE the IndexBook cannot express for every value).  With every
symbol bound nothing is allowed.  Any signal (a crash) or a run past 300 s fails.
"""
import os
import re
import subprocess
import sys

tinyc, root = sys.argv[1], sys.argv[2]
ALLOWED_UNBOUND = {"AccessOutOfBounds", "SymbolicReshape"}
files = sorted(os.path.join(d, f)
               for top in ("tests", "examples")
               for d, _, fs in os.walk(os.path.join(root, top))
               for f in fs if f.endswith(".uop"))


def symbols(path):
    """The size symbols of a graph: identifiers inside the [dims] after ':'."""
    text = open(path, encoding="utf-8", errors="replace").read()
    out = set()
    for dims in re.findall(r":\s*[A-Za-z0-9_]+\[([^\]]*)\]", text):
        out.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", dims))
    return sorted(out)


def tinyc_run(args):
    """Run tinyc; a run past 300 s counts as a failure (exit -1)."""
    try:
        p = subprocess.run([tinyc] + args, capture_output=True, text=True, errors="replace",
                           timeout=300)
    except subprocess.TimeoutExpired:
        return -1, "timed out after 300 s"
    return p.returncode, p.stderr


checked = agreed = 0
bad = []
for path in files:
    syms = symbols(path)
    configs = [([], "sm_80", ALLOWED_UNBOUND)]
    if syms:
        configs.append((["--bind", ",".join(f"{s}=5" for s in syms)], "sm_90a", set()))
    for bind, target, allowed in configs:
        rc, err = tinyc_run(["--dump-stage=uop"] + bind + [path])
        if rc < 0 or rc > 2:
            bad.append(f"{path} {bind}: uop stage died (exit {rc})")
            continue
        if rc != 0:
            continue  # refused by the uop verifier (or the parser): nothing to compare
        checked += 1
        rc, err = tinyc_run(["--verify-each", "--dump-stage=cuda", f"--target={target}"] + bind + [path])
        kinds = set(re.findall(r"error: ([A-Za-z]+):", err))
        if rc == 0:
            agreed += 1
        elif rc == 1 and kinds and kinds <= allowed:
            agreed += 1
        else:
            bad.append(f"{path} {' '.join(bind)} {target}: exit {rc}: {err.strip()[:400]}")
print(f"{len(files)} graphs, {checked} accepted by the uop verifier, {agreed} agree")
for b in bad:
    print("DISAGREE:", b)
sys.exit(1 if bad else 0)
