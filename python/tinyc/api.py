"""tinyc's Python API over libtinyc.so (ctypes; docs/python-api.md).

    m = tinyc.compile(text, bind="M=64", device="cpu")   # or device="cuda"
    out = m(X=x, W=w)                                     # {"Y": array}
    m.dump("schedule"); m.cuda_source(); m.bench(X=x, W=w)

On the CPU devices ("cpu", "ref", "gpuir") inputs and outputs are NumPy arrays, or tinygrad
Tensors (outputs are then tinygrad Tensors on the inputs' device).  On "cuda" they are CUDA
tensors of the caller's framework (PyTorch, CuPy, or anything with __dlpack__): their
device pointers are read through DLPack, nothing is copied to the host, the kernels are
enqueued on the framework's current stream, and the outputs are allocated by the same
framework.  tinygrad 0.14.0 has no DLPack: its CUDA tensors are read through their device
buffers (see _tinygrad_cuda_view).
"""
import ctypes
import statistics
import time

from . import _lib

_DEVICES = ("cpu", "ref", "gpuir", "cuda")


class TinycError(RuntimeError):
    """A failed tinyc call: .status (TINYC_ERROR_*), .kind ("BroadcastMismatch") and the
    clang-style diagnostics as the message."""

    def __init__(self, status, kind, diagnostics):
        super().__init__(diagnostics.rstrip() or status)
        self.status = status
        self.kind = kind


class Context:
    """A tinyc_context (freed with the object)."""

    def __init__(self):
        self._lib = _lib.lib()
        self.handle = self._lib.tinyc_context_new()
        if not self.handle:
            raise MemoryError("tinyc_context_new")

    def check(self, status):
        """Raise TinycError for a failed call."""
        if status != _lib.OK:
            name = self._lib.tinyc_status_name(status).decode()
            kind = self._lib.tinyc_context_error_kind(self.handle)
            diags = self._lib.tinyc_context_diagnostics(self.handle).decode()
            raise TinycError(name, kind.decode() if kind else None, diags)

    def __del__(self):
        if getattr(self, "handle", None):
            self._lib.tinyc_context_free(self.handle)
            self.handle = None


class Tensor:
    """What an input or output looks like: name, dtype (tinygrad's name), shape (None for a
    size not known yet), symbols (per dim, None for constants), strided, storage."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.dtype, self.numpy_dtype = _lib.TYPES[info.type]
        self.shape = tuple(None if info.shape[d] < 0 else info.shape[d] for d in range(info.rank))
        self.symbols = tuple(info.dim_symbol[d].decode() if info.dim_symbol[d] else None
                             for d in range(info.rank))
        self.strided = bool(info.strided)
        self.storage = None if info.storage < 0 else info.storage

    def __repr__(self):
        dims = ",".join("?" if s is None else str(s) for s in self.shape)
        return f"Tensor({self.name}: {self.dtype}[{dims}])"


# ---- DLPack (dlpack.h, the v0.x ABI every framework exports) -----------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_KDLCUDA = 2
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# tinygrad dtype name -> the DLPack (code, bits) pairs that may carry it
_DL_CODES = {"bool": [(6, 8), (1, 8)], "char": [(0, 8)], "uchar": [(1, 8)], "short": [(0, 16)],
             "ushort": [(1, 16)], "int": [(0, 32)], "uint": [(1, 32)], "long": [(0, 64)],
             "ulong": [(1, 64)], "half": [(2, 16)], "bfloat16": [(4, 16)], "float": [(2, 32)],
             "double": [(2, 64)]}
_TORCH_DTYPES = {"bool": "bool", "char": "int8", "uchar": "uint8", "short": "int16",
                 "ushort": "uint16", "int": "int32", "uint": "uint32", "long": "int64",
                 "ulong": "uint64", "half": "float16", "bfloat16": "bfloat16",
                 "float": "float32", "double": "float64"}


def _dl_view(x, stream):
    """(capsule, device address, shape) of a CUDA tensor through its __dlpack__; the capsule
    must stay referenced while the address is used."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} has no __dlpack__: pass a CUDA tensor")
    # DLPack: stream 1 is the legacy default stream; 0 is not allowed for CUDA
    capsule = x.__dlpack__(stream=stream if stream else 1)
    ptr = _capsule_pointer(capsule, b"dltensor")
    t = ctypes.cast(ptr, ctypes.POINTER(_DLManagedTensor)).contents.dl_tensor
    if t.device.device_type != _KDLCUDA:
        raise TypeError("a tensor given to a cuda program is not on a CUDA device")
    shape = tuple(t.shape[d] for d in range(t.ndim))
    if t.strides:
        want, ok = 1, True
        for d in reversed(range(t.ndim)):
            if shape[d] != 1 and t.strides[d] != want:
                ok = False
            want *= shape[d]
        if not ok:
            raise ValueError("the tensor is not contiguous (row-major): call .contiguous()")
    return capsule, (t.data or 0) + t.byte_offset, shape, (t.dtype.code, t.dtype.bits)


def _framework_of(x):
    """The framework module of a CUDA tensor: torch or cupy (None when neither)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return torch
    if mod == "cupy":
        import cupy
        return cupy
    return None


def _host_arrays(inputs):
    """Whether the given inputs are all NumPy arrays (host memory), at least one given."""
    import numpy as np
    given = [x for x in inputs.values() if x is not None]
    return bool(given) and all(isinstance(x, np.ndarray) for x in given)


def _is_tinygrad(x):
    """Whether x is a tinygrad Tensor."""
    return type(x).__module__.split(".")[0] == "tinygrad"


def _tinygrad_cuda_view(x):
    """(tensor kept alive, device address, shape) of a tinygrad Tensor on tinygrad's CUDA
    device.  tinygrad 0.14.0 exports no DLPack; its Buffer on the CUDA device holds a
    CUdeviceptr (Buffer._buf), which is read after realizing a contiguous copy.  tinygrad runs
    its kernels in its own CUDA context, which is synchronised first so that the data is
    there."""
    dev = str(x.device)
    if dev.split(":")[0] != "CUDA":
        raise TypeError(f"a tinygrad tensor given to a cuda program must be on tinygrad's CUDA "
                        f"device, not {dev}")
    from tinygrad import Device
    x = x.contiguous().realize()
    buf = x._buffer()
    Device[dev].synchronize()
    return x, int(buf._buf.value), tuple(int(d) for d in x.shape)


def _tinygrad_dtype(name):
    """The tinygrad dtype of a tinyc dtype name (the names are tinygrad's)."""
    from tinygrad import dtypes
    return getattr(dtypes, name)


def _cuda_synchronize():
    """Wait for the kernels tinyc enqueued in its (primary) CUDA context."""
    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
    if _libcuda.cuCtxSynchronize() != 0:
        raise RuntimeError("cuCtxSynchronize failed after the tinyc launch")


_libcuda = None


def _current_stream(fw, x):
    """The framework's current stream on x's device, as a CUstream integer (0: default)."""
    if fw is None:
        return 0
    if fw.__name__ == "torch":
        return fw.cuda.current_stream(x.device).cuda_stream
    return fw.cuda.get_current_stream().ptr


_MIXED = "mixed frameworks: give every input as tinygrad tensors or none"


class _DLPackSide:
    """The CUDA tensors of one DLPack framework (PyTorch, CuPy): read on its current
    stream, outputs allocated by it."""

    def __init__(self, first):
        self.fw = _framework_of(first) if first is not None else None
        self.first = first
        self.stream = _current_stream(self.fw, first)

    def view(self, t, x):
        """(x, the capsule to keep, device address, shape) of x, checked against input t."""
        if _is_tinygrad(x):
            raise TypeError(_MIXED)
        capsule, addr, shape, code = _dl_view(x, self.stream)
        if t is not None and code not in _DL_CODES[t.dtype]:
            raise TypeError(f"input {t.name}: DLPack dtype code {code[0]}, {code[1]} bits; "
                            f"the graph says {t.dtype}")
        return x, capsule, addr, shape

    def empty(self, dtype, shape):
        """An output tensor on the inputs' device."""
        if self.fw is None:
            raise TypeError("cannot allocate the outputs: pass PyTorch or CuPy CUDA tensors")
        dt = getattr(self.fw, _TORCH_DTYPES[dtype])
        if self.fw.__name__ == "torch":
            return self.fw.empty(shape, dtype=dt, device=self.first.device)
        with self.first.device:
            return self.fw.empty(shape, dtype=dt)


class _TinygradSide:
    """tinygrad CUDA tensors (device buffers, no DLPack).  stream None: the launch is
    synchronised instead (tinygrad's context is not tinyc's)."""
    stream = None

    def __init__(self, first):
        self.device = first.device

    def view(self, t, x):
        """(the realized contiguous tensor, the same to keep, address, shape) of x."""
        if not _is_tinygrad(x):
            raise TypeError(_MIXED)
        if t is not None and x.dtype.name != t.dtype:
            raise TypeError(f"input {t.name} is {x.dtype.name}, the graph says {t.dtype}")
        x, addr, shape = _tinygrad_cuda_view(x)
        return x, x, addr, shape

    def empty(self, dtype, shape):
        """An output tensor on the inputs' device."""
        from tinygrad import Tensor as TgTensor
        return TgTensor.empty(*shape, dtype=_tinygrad_dtype(dtype), device=self.device)


class Module:
    """A compiled graph (a tinyc_program): call it with the inputs by name."""

    def __init__(self, text, bind=None, device="cpu", target=None, runtime_sizes=False,
                 name="<python>", isolate=True, gpu_timeout=None):
        if device not in _DEVICES:
            raise ValueError(f"unknown device {device!r} (known: {', '.join(_DEVICES)})")
        self._ctx = Context()
        self._lib = self._ctx._lib
        # host-array runs on cuda: in the GPU worker process (a fault there cannot harm us)
        self._ctx.check(self._lib.tinyc_context_set_gpu_isolation(self._ctx.handle, int(isolate)))
        if gpu_timeout is not None:
            self._ctx.check(self._lib.tinyc_context_set_gpu_timeout(self._ctx.handle,
                                                                     float(gpu_timeout)))
        self.device = device
        if isinstance(bind, dict):
            bind = ",".join(f"{k}={v}" for k, v in bind.items())
        opt = _lib.CompileOptions(bind.encode() if bind else None, device.encode(),
                                  target.encode() if target else None, int(runtime_sizes), 0)
        handle = ctypes.c_void_p()
        self._prog = None
        self._ctx.check(self._lib.tinyc_program_compile(self._ctx.handle, text.encode(),
                                                        name.encode(), ctypes.byref(opt),
                                                        ctypes.byref(handle)))
        self._prog = handle

    def __del__(self):
        if getattr(self, "_prog", None):
            self._lib.tinyc_program_free(self._prog)
            self._prog = None

    def _info(self, fn, i):
        info = _lib.TensorInfo()
        self._ctx.check(fn(self._prog, i, ctypes.byref(info)))
        return Tensor(info)

    @property
    def inputs(self):
        """The inputs (by BUFFER slot) under the sizes known now."""
        n = self._lib.tinyc_program_num_inputs(self._prog)
        return [self._info(self._lib.tinyc_program_input_info, i) for i in range(n)]

    @property
    def outputs(self):
        """The outputs (by OUTPUT order) under the sizes known now."""
        n = self._lib.tinyc_program_num_outputs(self._prog)
        return [self._info(self._lib.tinyc_program_output_info, i) for i in range(n)]

    def set_sizes(self, bind):
        """Run-time sizes: "M=128,N=64" or {"M": 128}."""
        if isinstance(bind, dict):
            bind = ",".join(f"{k}={v}" for k, v in bind.items())
        self._ctx.check(self._lib.tinyc_program_set_sizes(self._prog,
                                                          bind.encode() if bind else None))

    def _order(self, given):
        """The given tensors by input index (every input needed, no unknown name)."""
        ins = self.inputs
        names = [t.name for t in ins]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TypeError(f"unknown input(s) {', '.join(unknown)}; inputs: {', '.join(names)}")
        missing = [n for n in names if n and n not in given]
        if missing:
            raise TypeError(f"missing input(s) {', '.join(missing)}")
        return ins, [given.get(t.name) for t in ins]

    def _infer(self, ins, shapes):
        """Set the sizes from the input shapes (strided inputs are flat storage: skipped)."""
        n = len(ins)
        ranks = (ctypes.c_int * max(n, 1))()
        ptrs = (ctypes.POINTER(ctypes.c_int64) * max(n, 1))()
        keep = []
        for i, (t, shape) in enumerate(zip(ins, shapes)):
            if shape is None or t.strided:
                continue
            arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            keep.append(arr)
            ranks[i] = len(shape)
            ptrs[i] = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        self._ctx.check(self._lib.tinyc_program_infer_sizes(self._prog, n, ranks, ptrs))

    def __call__(self, **inputs):
        """Run on the inputs (by name); returns {output name: tensor}.  On "cuda", NumPy
        arrays run through tinyc_program_run (copied to the GPU, in the GPU worker), CUDA
        tensors through tinyc_program_launch (their device pointers, in this process)."""
        if self.device == "cuda" and not _host_arrays(inputs):
            return self._call_cuda(inputs)
        return self._call_host(inputs)

    def _call_host(self, inputs):
        import numpy as np
        ins, arrays = self._order(inputs)
        tg = next((a for a in arrays if a is not None and _is_tinygrad(a)), None)
        conv = []
        for t, a in zip(ins, arrays):
            if a is None:
                conv.append(None)
                continue
            if _is_tinygrad(a):     # realized and copied to the host
                a = a.numpy()
            if t.numpy_dtype is None:
                raise TypeError(f"input {t.name} is {t.dtype}, which NumPy has no dtype for")
            a = np.asarray(a)
            if a.dtype != np.dtype(t.numpy_dtype):
                raise TypeError(f"input {t.name} is {a.dtype}, the graph says {t.dtype} "
                                f"({t.numpy_dtype})")
            conv.append(np.ascontiguousarray(a))
        self._infer(ins, [None if a is None else a.shape for a in conv])
        outs = self.outputs
        result = {}
        out_arrays = []
        for t in outs:
            if t.numpy_dtype is None:
                raise TypeError(f"output {t.name} is {t.dtype}, which NumPy has no dtype for")
            shape = (t.storage,) if t.strided else t.shape
            arr = np.empty(shape, dtype=t.numpy_dtype)
            out_arrays.append(arr)
            result[t.name] = arr
        n_in, n_out = max(len(ins), 1), max(len(outs), 1)
        in_p = (ctypes.c_void_p * n_in)(*[None if a is None else a.ctypes.data for a in conv])
        out_p = (ctypes.c_void_p * n_out)(*[a.ctypes.data for a in out_arrays])
        self._ctx.check(self._lib.tinyc_program_run(self._prog, in_p, out_p))
        if tg is not None:      # tinygrad in, tinygrad out (on the inputs' device)
            from tinygrad import Tensor as TgTensor
            result = {k: TgTensor(v, device=tg.device) for k, v in result.items()}
        return result

    def _prepare_cuda(self, inputs):
        """Everything one CUDA launch needs: (input addresses, output addresses, stream,
        the output tensors by name, the capsules or tensors to keep alive)."""
        ins, tensors = self._order(inputs)
        first = next((x for x in tensors if x is not None), None)
        tinygrad = first is not None and _is_tinygrad(first)
        side = (_TinygradSide if tinygrad else _DLPackSide)(first)
        keep, in_addr, shapes = [], [], []
        for t, x in zip(ins, tensors):
            if x is None:
                in_addr.append(0)
                shapes.append(None)
                continue
            _, kept, addr, shape = side.view(t, x)
            keep.append(kept)
            in_addr.append(addr)
            shapes.append(shape)
        self._infer(ins, shapes)
        result, out_addr = {}, []
        for t in self.outputs:
            shape = (t.storage,) if t.strided else t.shape
            y, kept, addr, _ = side.view(None, side.empty(t.dtype, shape))
            keep.append(kept)
            out_addr.append(addr)
            result[t.name] = y
        n_in, n_out = max(len(in_addr), 1), max(len(out_addr), 1)
        return ((ctypes.c_uint64 * n_in)(*in_addr), (ctypes.c_uint64 * n_out)(*out_addr),
                side.stream, result, keep)

    def _launch(self, in_p, out_p, stream):
        self._ctx.check(self._lib.tinyc_program_launch(self._prog, in_p, out_p,
                                                       ctypes.c_void_p(stream or None)))

    def _call_cuda(self, inputs):
        in_p, out_p, stream, result, keep = self._prepare_cuda(inputs)
        self._launch(in_p, out_p, stream)
        if stream is None:      # tinygrad: its next kernels cannot wait on our stream
            _cuda_synchronize()
        del keep  # the tensors themselves stay alive with the caller and in result
        return result

    def dump(self, stage="uop"):
        """The text dump of a stage, as tinyc --dump-stage=STAGE prints it."""
        out = ctypes.c_void_p()
        self._ctx.check(self._lib.tinyc_program_dump(self._prog, stage.encode(),
                                                     ctypes.byref(out)))
        try:
            return ctypes.string_at(out).decode()
        finally:
            self._lib.tinyc_string_free(out)

    def cuda_source(self):
        """The CUDA C++ text of the program's kernels."""
        return self.dump("cuda")

    def bench(self, warmup=10, iters=100, graph=True, **inputs):
        """Time the program on these inputs.  CUDA: `iters` launches between two CUDA events
        on the current stream, captured once into a CUDA graph and replayed (graph=True,
        PyTorch only), or back-to-back (launch overhead included); the result is the time per
        launch.  CPU devices: the median wall time of `iters` calls.  Returns a dict with
        ms, iters and how it was measured."""
        if self.device != "cuda":
            for _ in range(warmup):
                self(**inputs)
            times = []
            for _ in range(iters):
                t0 = time.perf_counter()
                self(**inputs)
                times.append((time.perf_counter() - t0) * 1e3)
            return {"ms": statistics.median(times), "iters": iters,
                    "method": f"median wall time of {iters} calls ({self.device})"}
        in_p, out_p, stream, result, keep = self._prepare_cuda(inputs)
        first = next(iter(inputs.values()))
        fw = _framework_of(first)
        if fw is None or fw.__name__ != "torch":
            raise TypeError("bench on cuda times with torch.cuda events: pass PyTorch tensors")
        torch = fw
        for _ in range(warmup):
            self._launch(in_p, out_p, stream)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if graph:
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                with torch.cuda.graph(g, stream=s):
                    cap = torch.cuda.current_stream().cuda_stream
                    for _ in range(iters):
                        self._launch(in_p, out_p, cap)
            torch.cuda.current_stream().wait_stream(s)
            g.replay()
            torch.cuda.synchronize()
            start.record()
            g.replay()
            end.record()
            method = f"CUDA graph of {iters} launches, replayed between events"
        else:
            start.record()
            for _ in range(iters):
                self._launch(in_p, out_p, stream)
            end.record()
            method = f"{iters} back-to-back launches between events (launch overhead included)"
        torch.cuda.synchronize()
        del keep
        return {"ms": start.elapsed_time(end) / iters, "iters": iters, "method": method,
                "outputs": result}


def compile(text_or_tensors, bind=None, device="cpu", target=None, runtime_sizes=False,
            name="<python>", isolate=True, gpu_timeout=None):
    """Compile tinyc-uop v0 text, or tinygrad tensors (passed to tinyc.from_tinygrad: an
    outputs tensor/list, or an (outputs, inputs) tuple), for device "cpu" (default), "ref",
    "gpuir" or "cuda".  bind: "M=64,N=32" or {"M": 64}: compile-time sizes (run-time ones
    with runtime_sizes=True).  Sizes not bound are read off the inputs at each call.
    isolate, gpu_timeout: NumPy arrays on "cuda" run in the GPU worker process (isolate=False:
    in this process) with that time limit in seconds (default 60; 0: none);
    docs/reliability.md."""
    text = text_or_tensors
    if not isinstance(text, str):
        try:
            from . import from_tinygrad
        except ImportError as e:
            raise TypeError("compile() takes graph text; tensors need tinyc.from_tinygrad, "
                            f"which is not available ({e})") from None
        text = (from_tinygrad(*text) if isinstance(text, tuple) else from_tinygrad(text))
    return Module(text, bind=bind, device=device, target=target,
                  runtime_sizes=runtime_sizes, name=name, isolate=isolate, gpu_timeout=gpu_timeout)


def version():
    """The library's version."""
    return _lib.lib().tinyc_version().decode()
