/* tinyc.h: the public C API of tinyc, a tensor-graph compiler.
 *
 * Compile a tinyc-uop v0 graph (text) into a program, ask it for its inputs and outputs,
 * run it on host arrays (CPU paths), or launch its CUDA kernels many times on device
 * pointers and a CUstream of the caller's.  Every stage's dump and the generated CUDA are
 * available as text.  This is the only header the installed library has; it exposes no
 * internal structure and no isl type.
 *
 * Ownership, in isl's words:
 *   __tinyc_give  the function returns something new: the caller frees it (with the
 *                 matching *_free function, tinyc_string_free for strings);
 *   __tinyc_take  the function consumes the argument: the caller must not use it again;
 *   __tinyc_keep  the function only borrows the argument (or the caller only borrows the
 *                 result: it stays owned by the object it came from).
 *
 * Errors: every function that can fail returns a tinyc_status (TINYC_OK = 0).  The
 * diagnostics of the failing call (clang-style "file:line:col: error: Kind: message" with
 * the source line and a caret, or "error: Kind: message") are kept on the context until its
 * next call: tinyc_context_diagnostics and tinyc_context_error_kind read them.  The library
 * never prints, never exits and never aborts on bad input.
 *
 * Threads: a context and everything made with it belong to one thread at a time; different
 * contexts may be used from different threads concurrently.  See docs/c-api.md.
 */
#ifndef TINYC_H
#define TINYC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef __tinyc_give
#define __tinyc_give
#define __tinyc_take
#define __tinyc_keep
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TINYC_API __attribute__((visibility("default")))
#else
#define TINYC_API
#endif

#define TINYC_VERSION_MAJOR 0
#define TINYC_VERSION_MINOR 2
#define TINYC_VERSION_PATCH 0

/* Result of every call that can fail. */
typedef enum tinyc_status {
	TINYC_OK = 0,			/* success */
	TINYC_ERROR_INPUT = 1,		/* the graph or a value given is invalid (diagnostics) */
	TINYC_ERROR_USAGE = 2,		/* the API was misused: NULL, index out of range, wrong device */
	TINYC_ERROR_NO_MEMORY = 3,	/* an allocation failed */
	TINYC_ERROR_NO_GPU = 4,		/* no CUDA driver or device */
	TINYC_ERROR_CUDA = 5,		/* the CUDA driver, nvrtc or the GPU worker failed */
} tinyc_status;

/* Element types, tinygrad's names.  16-bit floats are stored as their bit patterns, bool
 * as one byte 0/1. */
typedef enum tinyc_type {
	TINYC_TYPE_BOOL,		/* "bool", 1 byte */
	TINYC_TYPE_INT8,		/* "char" */
	TINYC_TYPE_UINT8,		/* "uchar" */
	TINYC_TYPE_INT16,		/* "short" */
	TINYC_TYPE_UINT16,		/* "ushort" */
	TINYC_TYPE_INT32,		/* "int" */
	TINYC_TYPE_UINT32,		/* "uint" */
	TINYC_TYPE_INT64,		/* "long" */
	TINYC_TYPE_UINT64,		/* "ulong" */
	TINYC_TYPE_FLOAT16,		/* "half" */
	TINYC_TYPE_BFLOAT16,		/* "bfloat16" */
	TINYC_TYPE_FLOAT32,		/* "float" */
	TINYC_TYPE_FLOAT64,		/* "double" */
} tinyc_type;

#define TINYC_MAX_DIMS 16	/* the highest rank a tensor of tinyc has */

/* A context: diagnostics of the last call, and what its programs share. */
typedef struct tinyc_context tinyc_context;
/* A compiled graph (a module): kernels, sizes, and on CUDA the loaded kernels. */
typedef struct tinyc_program tinyc_program;

/* What a program's input or output looks like under the sizes known now. */
typedef struct tinyc_tensor_info {
	const char *name;		/* BUFFER/OUTPUT name= (kept: owned by the program) */
	tinyc_type type;		/* element type */
	int elem_size;			/* bytes per element */
	int rank;			/* number of dims (0: a scalar) */
	int64_t shape[TINYC_MAX_DIMS];	/* sizes; -1 where a size symbol has no value yet */
	const char *dim_symbol[TINYC_MAX_DIMS];	/* the symbol of each dim ("M"), NULL for a
						 * constant (kept: owned by the program) */
	int strided;			/* 1: the graph gives explicit strides= */
	int64_t storage;		/* elements the caller's buffer holds: the product of the
					 * shape, or 1 + sum((shape-1)*stride) when strided;
					 * -1 while a size is unknown */
} tinyc_tensor_info;

/* How to compile.  Zero-initialise, then set what you need. */
typedef struct tinyc_compile_options {
	const char *bind;	/* compile-time sizes "M=64,N=32" (kernels specialised), or NULL */
	const char *device;	/* "cpu" (RB-SSA interpreter, default), "ref" (reference
				 * evaluator), "gpuir" (the kernels' GPU IR on a CPU interpreter)
				 * or "cuda" (the kernels on the GPU) */
	const char *target;	/* GPU target "sm_80", "sm_90a"..., or NULL: the device's */
	int runtime_sizes;	/* 1: `bind` values reach the kernels only at run time
				 * (symbolic kernels, like tinyc run --runtime-sizes) */
	int verify_each;	/* 1: run every stage's verifier, not only the last one's */
} tinyc_compile_options;

/* ---- library and context ------------------------------------------------------------ */

/* The library's version, "0.2.0" (static string). */
TINYC_API const char *tinyc_version(void);
/* The name of a status, "TINYC_ERROR_INPUT" (static string). */
TINYC_API const char *tinyc_status_name(tinyc_status s);
/* tinygrad's name of a type ("half") and its size in bytes; NULL / 0 when out of range. */
TINYC_API const char *tinyc_type_name(tinyc_type t);
TINYC_API int tinyc_type_size(tinyc_type t);

/* A new context, or NULL when out of memory. */
TINYC_API __tinyc_give tinyc_context *tinyc_context_new(void);
/* Free a context.  Free its programs first.  NULL is ignored. */
TINYC_API void tinyc_context_free(__tinyc_take tinyc_context *ctx);
/* The diagnostics of the context's last call as text, one per line, clang-style; "" when
 * it succeeded.  Valid until the next call on ctx. */
TINYC_API __tinyc_keep const char *tinyc_context_diagnostics(tinyc_context *ctx);
/* The Kind of the last call's first error ("BroadcastMismatch"), or NULL.  Valid until the
 * next call on ctx. */
TINYC_API __tinyc_keep const char *tinyc_context_error_kind(tinyc_context *ctx);
/* GPU fault containment of tinyc_program_run on device "cuda" (docs/reliability.md): with
 * isolation on (the default) the kernels run in a worker process of the context's, so that
 * a kernel that faults (CudaError ... "(the GPU worker was restarted)") or runs past the time
 * limit (GpuTimeout) fails only that call: the next call starts a fresh worker.  Off: they
 * run in this process, where a fault leaves CUDA unusable for the rest of the process (a
 * driver rule; tinyc_program_launch is always in this process).  TINYC_ERROR_USAGE for a
 * NULL context. */
TINYC_API tinyc_status tinyc_context_set_gpu_isolation(tinyc_context *ctx, int on);
/* The time limit of an isolated run, seconds (default 60; 0: none; negative or NaN:
 * TINYC_ERROR_USAGE). */
TINYC_API tinyc_status tinyc_context_set_gpu_timeout(tinyc_context *ctx, double seconds);
/* Free a string a tinyc function gave.  NULL is ignored. */
TINYC_API void tinyc_string_free(__tinyc_take char *s);

/* ---- compiling ---------------------------------------------------------------------- */

/* Compile graph text (tinyc-uop v0; `file_name` is what diagnostics call it, NULL:
 * "<input>") with options (NULL: all defaults) into *out.  The program keeps ctx: free the
 * program before the context.  On error *out is NULL and the diagnostics are on ctx. */
TINYC_API tinyc_status tinyc_program_compile(__tinyc_keep tinyc_context *ctx,
					     __tinyc_keep const char *text,
					     __tinyc_keep const char *file_name,
					     __tinyc_keep const tinyc_compile_options *opt,
					     __tinyc_give tinyc_program **out);
/* Free a program (and on CUDA its loaded kernels and workspace).  NULL is ignored. */
TINYC_API void tinyc_program_free(__tinyc_take tinyc_program *p);

/* The device the program runs on ("cpu", "ref", "gpuir", "cuda"; kept). */
TINYC_API __tinyc_keep const char *tinyc_program_device(const tinyc_program *p);
/* Inputs: one per BUFFER slot 0..n-1 (input i is the BUFFER with slot=i).  Outputs: one per
 * OUTPUT, in graph order. */
TINYC_API int tinyc_program_num_inputs(const tinyc_program *p);
TINYC_API int tinyc_program_num_outputs(const tinyc_program *p);
/* Describe input / output i under the sizes known now (compile-time bindings, then those of
 * tinyc_program_set_sizes or tinyc_program_infer_sizes). */
TINYC_API tinyc_status tinyc_program_input_info(const tinyc_program *p, int i,
						tinyc_tensor_info *out);
TINYC_API tinyc_status tinyc_program_output_info(const tinyc_program *p, int i,
						 tinyc_tensor_info *out);
/* The index of the input / output named `name`, or -1. */
TINYC_API int tinyc_program_find_input(const tinyc_program *p, const char *name);
TINYC_API int tinyc_program_find_output(const tinyc_program *p, const char *name);

/* ---- sizes -------------------------------------------------------------------------- */

/* Set the run-time sizes: the compile-time bindings, then "M=128,N=64" (NULL: none).  A
 * value that contradicts a compile-time one is an error. */
TINYC_API tinyc_status tinyc_program_set_sizes(tinyc_program *p, __tinyc_keep const char *bind);
/* Set the run-time sizes from the shapes of the inputs: the compile-time bindings, then every
 * symbol read off ranks[i] / shapes[i] (n entries, by input; shapes[i] NULL skips input i).
 * Inconsistent shapes are an InconsistentBinding or InputMismatch error. */
TINYC_API tinyc_status tinyc_program_infer_sizes(tinyc_program *p, int n, const int *ranks,
						 const int64_t *const *shapes);

/* ---- running on host arrays --------------------------------------------------------- */

/* Run on host memory: inputs[i] holds input i (its info's storage elements, C order),
 * outputs[i] receives output i (storage elements; a strided output is zero where nothing is
 * written).  Every size must be known.  Works on every device; on "cuda" the data is copied
 * to and from the GPU (use tinyc_program_launch to avoid that), in the context's GPU worker
 * unless isolation is off (tinyc_context_set_gpu_isolation).  Synchronous. */
TINYC_API tinyc_status tinyc_program_run(tinyc_program *p, __tinyc_keep const void *const *inputs,
					 __tinyc_keep void *const *outputs);

/* ---- CUDA: device pointers and streams ---------------------------------------------- */

/* Load the program's kernels on CUDA device 0 (nvrtc through the kernel cache, then the
 * driver), once; tinyc_program_launch does it on first use.  Device "cuda" only. */
TINYC_API tinyc_status tinyc_program_load(tinyc_program *p);
/* Enqueue the program on `stream` (a CUstream; NULL: the legacy default stream) of the
 * primary context of device 0: zero the outputs, then every kernel in order.  inputs[i] and
 * outputs[i] are CUdeviceptr values of the caller's (storage elements each, 16-byte aligned
 * for the Hopper matmul's TMA).  Asynchronous: returns once enqueued.  A workspace for the
 * program's intermediates is kept between launches: launches of one program must not run
 * concurrently on different streams.  Device "cuda" only. */
TINYC_API tinyc_status tinyc_program_launch(tinyc_program *p, const uint64_t *inputs,
					    const uint64_t *outputs, void *stream);
/* Number of kernels a launch enqueues (after tinyc_program_load), else 0. */
TINYC_API int tinyc_program_num_kernels(const tinyc_program *p);

/* ---- text --------------------------------------------------------------------------- */

/* The text dump of stage `stage` ("uop", "indexbook", "polyview", "rbssa", "polycore",
 * "evt", "schedule", "gpuir", "cuda"), as tinyc --dump-stage prints it, into *out. */
TINYC_API tinyc_status tinyc_program_dump(tinyc_program *p, const char *stage,
					  __tinyc_give char **out);
/* The CUDA source of the program's kernels (the "cuda" stage), into *out. */
TINYC_API tinyc_status tinyc_program_cuda_source(tinyc_program *p, __tinyc_give char **out);

#ifdef __cplusplus
}
#endif

#endif
