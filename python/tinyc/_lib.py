"""Loading libtinyc.so and declaring its C API (include/tinyc.h) for ctypes.

The library is looked up in this order:
  1. $TINYC_LIB: the path of libtinyc.so (or of a directory holding it);
  2. this package's directory (a wheel or an install that copied the library in);
  3. the repository's build directory (python/../build, or $TINYC_BUILD_DIR);
  4. the system's library path (an installed tinyc: libtinyc.so.0).
"""
import ctypes
import ctypes.util
import os

MAX_DIMS = 16  # TINYC_MAX_DIMS

# tinyc_status
OK, ERROR_INPUT, ERROR_USAGE, ERROR_NO_MEMORY, ERROR_NO_GPU, ERROR_CUDA = range(6)

# tinyc_type, in the header's order: (tinygrad name, NumPy dtype name or None)
TYPES = [("bool", "bool"), ("char", "int8"), ("uchar", "uint8"), ("short", "int16"),
         ("ushort", "uint16"), ("int", "int32"), ("uint", "uint32"), ("long", "int64"),
         ("ulong", "uint64"), ("half", "float16"), ("bfloat16", None), ("float", "float32"),
         ("double", "float64")]


class TensorInfo(ctypes.Structure):
    """struct tinyc_tensor_info."""
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("elem_size", ctypes.c_int),
                ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * MAX_DIMS),
                ("dim_symbol", ctypes.c_char_p * MAX_DIMS), ("strided", ctypes.c_int),
                ("storage", ctypes.c_int64)]


class CompileOptions(ctypes.Structure):
    """struct tinyc_compile_options."""
    _fields_ = [("bind", ctypes.c_char_p), ("device", ctypes.c_char_p),
                ("target", ctypes.c_char_p), ("runtime_sizes", ctypes.c_int),
                ("verify_each", ctypes.c_int)]


def _candidates():
    """Paths to try, in order."""
    env = os.environ.get("TINYC_LIB")
    if env:
        yield os.path.join(env, "libtinyc.so") if os.path.isdir(env) else env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libtinyc.so")
    build = os.environ.get("TINYC_BUILD_DIR") or os.path.join(here, "..", "..", "build")
    yield os.path.join(build, "libtinyc.so")
    found = ctypes.util.find_library("tinyc")
    yield found or "libtinyc.so.0"


def _declare(lib):
    """Argument and result types of every function of tinyc.h."""
    P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    sig = {
        "tinyc_version": (S, []),
        "tinyc_status_name": (S, [I]),
        "tinyc_context_new": (P, []),
        "tinyc_context_free": (None, [P]),
        "tinyc_context_diagnostics": (S, [P]),
        "tinyc_context_error_kind": (S, [P]),
        "tinyc_context_set_gpu_isolation": (I, [P, I]),
        "tinyc_context_set_gpu_timeout": (I, [P, ctypes.c_double]),
        "tinyc_string_free": (None, [P]),
        "tinyc_program_compile": (I, [P, S, S, ctypes.POINTER(CompileOptions),
                                      ctypes.POINTER(P)]),
        "tinyc_program_free": (None, [P]),
        "tinyc_program_device": (S, [P]),
        "tinyc_program_num_inputs": (I, [P]),
        "tinyc_program_num_outputs": (I, [P]),
        "tinyc_program_input_info": (I, [P, I, ctypes.POINTER(TensorInfo)]),
        "tinyc_program_output_info": (I, [P, I, ctypes.POINTER(TensorInfo)]),
        "tinyc_program_set_sizes": (I, [P, S]),
        "tinyc_program_infer_sizes": (I, [P, I, ctypes.POINTER(I),
                                          ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]),
        "tinyc_program_run": (I, [P, ctypes.POINTER(P), ctypes.POINTER(P)]),
        "tinyc_program_load": (I, [P]),
        "tinyc_program_launch": (I, [P, ctypes.POINTER(ctypes.c_uint64),
                                     ctypes.POINTER(ctypes.c_uint64), P]),
        "tinyc_program_num_kernels": (I, [P]),
        "tinyc_program_dump": (I, [P, S, ctypes.POINTER(P)]),
        "tinyc_program_cuda_source": (I, [P, ctypes.POINTER(P)]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


_lib = None


def lib():
    """The loaded library (loaded on first use); OSError naming every place tried."""
    global _lib
    if _lib is None:
        tried = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(path + " (missing)")
                continue
            try:
                _lib = _declare(ctypes.CDLL(path))
                break
            except OSError as e:
                tried.append(f"{path} ({e})")
        if _lib is None:
            raise OSError("libtinyc.so not found; set TINYC_LIB to its path. Tried: " +
                          "; ".join(tried))
    return _lib
