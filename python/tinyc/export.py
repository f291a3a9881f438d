"""python -m tinyc.export: run a script that builds a tinygrad model, write its graph as
tinyc-uop v0 text (docs/python.md).

usage: python -m tinyc.export SCRIPT.py [-o OUT.uop] [--func NAME] [-- SCRIPT ARGS...]

The script defines a function (default `export`) taking no arguments that returns
(outputs, inputs) or (outputs, inputs, params), in the forms tinyc.from_tinygrad takes.
The script runs with __name__ set to "__tinyc_export__" (its `if __name__ == "__main__"`
block does not run) and sys.argv = [SCRIPT, SCRIPT ARGS...].  Without -o (or with -o -)
the text goes to standard output.  Exit status: 0 written, 1 an error (the script's,
or an op the bridge cannot express), 2 bad usage.
"""

import os
import runpy
import sys

USAGE = "usage: python -m tinyc.export SCRIPT.py [-o OUT.uop] [--func NAME] [-- SCRIPT ARGS...]"


def _parse(argv):
    """(script, out, func, script_args) from the command line, or an error message."""
    script, out, func, rest = None, "-", "export", []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest = argv[i + 1:]
            break
        if a in ("-o", "--func"):
            if i + 1 == len(argv):
                return f"{a} needs a value"
            if a == "-o":
                out = argv[i + 1]
            else:
                func = argv[i + 1]
            i += 2
            continue
        if a in ("-h", "--help"):
            return None
        if a.startswith("-") and a != "-":
            return f"unknown option {a}"
        if script is not None:
            return f"more than one script ({script}, {a})"
        script = a
        i += 1
    if script is None:
        return "no script given"
    return script, out, func, rest


def main(argv=None):
    """The front door; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    parsed = _parse(argv)
    if parsed is None:
        print(__doc__.strip())
        return 0
    if isinstance(parsed, str):
        print(f"tinyc.export: error: {parsed}\n{USAGE}", file=sys.stderr)
        return 2
    script, out, func, rest = parsed
    if not os.path.isfile(script):
        print(f"{script}: error: IOError: no such file", file=sys.stderr)
        return 1
    from . import tinygrad_bridge
    saved = sys.argv
    sys.argv = [script] + rest
    try:
        env = runpy.run_path(script, run_name="__tinyc_export__")
        fn = env.get(func)
        if not callable(fn):
            print(f"{script}: error: NoExportFunction: the script defines no function "
                  f"{func}()", file=sys.stderr)
            return 1
        got = fn()
    finally:
        sys.argv = saved
    if not isinstance(got, tuple) or len(got) not in (2, 3):
        print(f"{script}: error: BadExport: {func}() must return (outputs, inputs) or "
              f"(outputs, inputs, params)", file=sys.stderr)
        return 1
    try:
        text = tinygrad_bridge.from_tinygrad(*got, comment=f"exported from {os.path.basename(script)}")
    except tinygrad_bridge.BridgeError as e:
        print(f"{script}: error: BridgeError: {e}", file=sys.stderr)
        return 1
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
