# lit configuration for tinyc's per-pass FileCheck tests (tests/lit/<stage>/*.uop).
import os
import lit.formats

config.name = "tinyc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".uop", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PATH"] = os.pathsep.join(
    [config.tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TINYC_CACHE_DIR", "HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%examples", os.path.join(config.source_root, "examples")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
