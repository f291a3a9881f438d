/* The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): nothing links against
 * the driver, so the compiler and its tests run on machines without a GPU and say so.
 * cuda.h is included for its types only; every entry point is called through the table
 * below, resolved with dlsym by its exported (versioned) name. */
#include "runtime/runtime.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_LOG_BYTES 8192	/* driver JIT error log kept when a module fails to load */

/* The driver entry points tinyc uses.  Field names drop the "cu" prefix so that cuda.h's
 * macros (cuMemAlloc -> cuMemAlloc_v2, ...) do not rewrite them. */
typedef struct driver_api {
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	CUresult (*Init)(unsigned int);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*DevicePrimaryCtxReset)(CUdevice);
	CUresult (*MemGetInfo)(size_t *, size_t *);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *,
				     void **);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned int);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*EventDestroy)(CUevent);
} driver_api;

/* Stream capture and CUDA graphs (CUDA 11.4+), resolved at open when present: what
 * tinyc_cuda_time_graph replays.  All NULL when the driver lacks one of them. */
typedef struct graph_api {
	CUresult (*StreamCreate)(CUstream *, unsigned int);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
	CUresult (*StreamEndCapture)(CUstream, CUgraph *);
	CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*GraphLaunch)(CUgraphExec, CUstream);
	CUresult (*GraphExecDestroy)(CUgraphExec);
	CUresult (*GraphDestroy)(CUgraph);
} graph_api;

/* Where each graph entry point is found (exported, versioned names). */
static const struct {
	const char *name;	/* exported symbol */
	size_t offset;		/* field in graph_api */
} graph_symbols[] = {
	{"cuStreamCreate", offsetof(graph_api, StreamCreate)},
	{"cuStreamDestroy_v2", offsetof(graph_api, StreamDestroy)},
	{"cuStreamSynchronize", offsetof(graph_api, StreamSynchronize)},
	{"cuStreamBeginCapture_v2", offsetof(graph_api, StreamBeginCapture)},
	{"cuStreamEndCapture", offsetof(graph_api, StreamEndCapture)},
	{"cuGraphInstantiateWithFlags", offsetof(graph_api, GraphInstantiate)},
	{"cuGraphLaunch", offsetof(graph_api, GraphLaunch)},
	{"cuGraphExecDestroy", offsetof(graph_api, GraphExecDestroy)},
	{"cuGraphDestroy", offsetof(graph_api, GraphDestroy)},
};

/* Where each entry point is found: the preferred exported name, then an older one. */
static const struct {
	const char *name;	/* exported symbol, versioned as cuda.h #defines it */
	const char *fallback;	/* name in older drivers, or NULL */
	size_t offset;		/* field in driver_api */
} symbols[] = {
#define SYM(field, name, fallback) {name, fallback, offsetof(driver_api, field)}
	SYM(GetErrorName, "cuGetErrorName", NULL),
	SYM(GetErrorString, "cuGetErrorString", NULL),
	SYM(Init, "cuInit", NULL),
	SYM(DriverGetVersion, "cuDriverGetVersion", NULL),
	SYM(DeviceGetCount, "cuDeviceGetCount", NULL),
	SYM(DeviceGet, "cuDeviceGet", NULL),
	SYM(DeviceGetName, "cuDeviceGetName", NULL),
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute", NULL),
	SYM(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL),
	SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
	SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
	SYM(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset"),
	SYM(MemGetInfo, "cuMemGetInfo_v2", NULL),
	SYM(CtxSetCurrent, "cuCtxSetCurrent", NULL),
	SYM(CtxSynchronize, "cuCtxSynchronize", NULL),
	SYM(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL),
	SYM(ModuleGetFunction, "cuModuleGetFunction", NULL),
	SYM(ModuleUnload, "cuModuleUnload", NULL),
	SYM(FuncGetAttribute, "cuFuncGetAttribute", NULL),
	SYM(FuncSetAttribute, "cuFuncSetAttribute", NULL),
	SYM(LaunchKernel, "cuLaunchKernel", NULL),
	SYM(MemAlloc, "cuMemAlloc_v2", NULL),
	SYM(MemFree, "cuMemFree_v2", NULL),
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL),
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL),
	SYM(MemcpyDtoD, "cuMemcpyDtoD_v2", NULL),
	SYM(MemsetD8, "cuMemsetD8_v2", NULL),
	SYM(MemsetD8Async, "cuMemsetD8Async", NULL),
	SYM(EventCreate, "cuEventCreate", NULL),
	SYM(EventRecord, "cuEventRecord", NULL),
	SYM(EventSynchronize, "cuEventSynchronize", NULL),
	SYM(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
	SYM(EventDestroy, "cuEventDestroy_v2", NULL),
#undef SYM
};

struct tinyc_cuda {
	tinyc_ctx *ctx;			/* where errors go (kept) */
	void *lib;			/* dlopen handle of libcuda.so.1 */
	driver_api api;			/* resolved entry points */
	graph_api graph;		/* stream capture and graphs (NULLs when missing) */
	int has_graphs;			/* every graph entry point was found */
	CUstream stream;		/* where launches go: NULL (the default stream), or the
					   capturing stream while tinyc_cuda_time_graph records */
	CUdevice dev;			/* the device */
	CUcontext pctx;			/* its primary context, retained */
	tinyc_device_info info;		/* properties read at open */
	int generation;			/* the context generation its handles belong to */
	int contained;			/* a worker's: a sticky fault is reported, not reset */
	int faulted;			/* a sticky fault happened (the context is unusable) */
	/* cuTensorMapEncodeTiled (CUDA 12+), resolved at open; NULL when the driver lacks it */
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
					 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
					 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
					 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
	/* cuLaunchKernelEx (CUDA 12+), resolved at open; NULL when the driver lacks it:
	 * kernels marked pdl are then launched plainly */
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
};

struct tinyc_kernel {
	tinyc_cuda *cu;			/* the driver it was loaded with (kept) */
	CUmodule mod;			/* the loaded image */
	CUfunction fn;			/* the kernel */
	int dyn_smem_optin;		/* dynamic shared memory opted in so far (bytes) */
	int generation;			/* the context generation it was loaded in */
	int pdl;			/* launched with programmatic stream serialization */
};

/* How many times a fault made the library reset the primary context (process-wide): a
 * module or allocation of an older generation is gone and must not be used or freed. */
static atomic_int context_generation;

/* Open the driver and resolve every entry point.  Returns the dlopen handle, or NULL with
 * *missing set to the first symbol not found (NULL when libcuda.so.1 itself is missing). */
static void *load_driver(driver_api *api, const char **missing)
{
	*missing = NULL;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return NULL;
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *p = dlsym(lib, symbols[i].name);
		if (!p && symbols[i].fallback)
			p = dlsym(lib, symbols[i].fallback);
		if (!p) {
			*missing = symbols[i].name;
			dlclose(lib);
			return NULL;
		}
		memcpy((char *)api + symbols[i].offset, &p, sizeof(p));	/* void* -> fn ptr */
	}
	return lib;
}

/* Whether r leaves the context unusable (a fault in a kernel: every later call fails). */
static int sticky_error(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
		return 1;
	default:
		return 0;
	}
}

/* After a sticky error: reset the primary context (every module and allocation in it is
 * destroyed), make it current again and start a new generation, so that the next compile
 * and run in this process work.  cu keeps its old generation until its owner calls
 * tinyc_cuda_stale: until then the frees of its old allocations are skipped (their addresses
 * may be reused by new ones).  Returns NULL when the context is usable again, else the name
 * of the driver call that failed and its error. */
static const char *recover(tinyc_cuda *cu, char *why, size_t size)
{
	CUcontext c = NULL;
	const char *step = "cuCtxSetCurrent(NULL)", *name = NULL;
	CUresult r = cu->api.CtxSetCurrent(NULL);
	/* drop this handle's retain (a context nobody retains is destroyed), reset whatever
	 * other handles still retain, then retain the fresh context in its place */
	if (r == CUDA_SUCCESS) {
		step = "cuDevicePrimaryCtxRelease";
		r = cu->api.DevicePrimaryCtxRelease(cu->dev);
	}
	if (r == CUDA_SUCCESS) {
		step = "cuDevicePrimaryCtxReset";
		r = cu->api.DevicePrimaryCtxReset(cu->dev);
	}
	if (r == CUDA_SUCCESS) {
		step = "cuDevicePrimaryCtxRetain";
		r = cu->api.DevicePrimaryCtxRetain(&c, cu->dev);
	}
	if (r == CUDA_SUCCESS) {
		cu->pctx = c;
		atomic_fetch_add(&context_generation, 1);	/* cu->generation stays: stale */
		step = "cuCtxSetCurrent";
		r = cu->api.CtxSetCurrent(c);
	}
	if (r == CUDA_SUCCESS)
		return NULL;
	if (cu->api.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "CUDA_ERROR_UNKNOWN";
	snprintf(why, size, "%s: %s", step, name);
	return why;
}

/* Report a failed driver call: "CudaError: cuXxx failed: NAME: description".  A fault that
 * leaves the context unusable resets it (recover) and says so. */
static int cuda_fail(tinyc_cuda *cu, const char *call, CUresult r, const char *extra)
{
	const char *name = NULL, *str = NULL;
	if (cu->api.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
		name = "CUDA_ERROR_UNKNOWN";
	if (cu->api.GetErrorString(r, &str) != CUDA_SUCCESS || !str)
		str = "unrecognised error code";
	char after[200] = "", why[96];
	if (sticky_error(r))
		cu->faulted = 1;
	if (sticky_error(r) && !cu->contained) {
		const char *failed = cu->pctx ? recover(cu, why, sizeof(why)) : "no context";
		if (failed)
			snprintf(after, sizeof(after), " (the driver keeps this fault: no CUDA call works "
				 "again in this process; reset: %s)", failed);
		else
			snprintf(after, sizeof(after), " (the CUDA context was reset; later runs work)");
	}
	return tinyc_error(cu->ctx, "CudaError", "%s failed: %s: %s%s%s%s", call, name, str,
			   extra ? " " : "", extra ? extra : "", after);
}

#define CHECK(cu, call, args) \
	do { \
		CUresult r_ = (cu)->api.call args; \
		if (r_ != CUDA_SUCCESS) \
			return cuda_fail((cu), "cu" #call, r_, NULL); \
	} while (0)

static int available;			/* tinyc_cuda_available's cached answer */
static pthread_once_t available_once = PTHREAD_ONCE_INIT;

/* Probe for a usable device once: driver present, cuInit works, at least one device. */
static void probe_available(void)
{
	driver_api api;
	const char *missing;
	void *lib = load_driver(&api, &missing);
	if (!lib)
		return;
	int n = 0;
	if (api.Init(0) == CUDA_SUCCESS && api.DeviceGetCount(&n) == CUDA_SUCCESS && n > 0)
		available = 1;
	dlclose(lib);
}

int tinyc_cuda_available(void)
{
	pthread_once(&available_once, probe_available);
	return available;
}

/* Read one device attribute; 0 when the driver does not know it. */
static int attr(tinyc_cuda *cu, CUdevice_attribute a)
{
	int v = 0;
	if (cu->api.DeviceGetAttribute(&v, a, cu->dev) != CUDA_SUCCESS)
		return 0;
	return v;
}

/* Fill cu->info from the driver. */
static int read_device_info(tinyc_cuda *cu)
{
	tinyc_device_info *d = &cu->info;
	*d = (tinyc_device_info){0};
	CHECK(cu, DeviceGetName, (d->name, (int)sizeof(d->name), cu->dev));
	d->name[sizeof(d->name) - 1] = 0;
	CHECK(cu, DeviceGetAttribute,
	      (&d->arch.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev));
	CHECK(cu, DeviceGetAttribute,
	      (&d->arch.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev));
	CHECK(cu, DeviceGetAttribute,
	      (&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu->dev));
	tinyc_arch_name(d->arch, 1, d->target, sizeof(d->target));
	d->warp_size = attr(cu, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
	d->max_threads_per_block = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	d->max_threads_per_sm = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	d->smem_per_block = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
	d->smem_per_block_optin = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	if (d->smem_per_block_optin < d->smem_per_block)
		d->smem_per_block_optin = d->smem_per_block;
	d->smem_per_sm = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	d->regs_per_block = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
	d->regs_per_sm = attr(cu, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
	d->clock_khz = attr(cu, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
	d->mem_clock_khz = attr(cu, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
	d->mem_bus_width = attr(cu, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
	d->l2_bytes = attr(cu, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
	size_t total = 0;
	if (cu->api.DeviceTotalMem(&total, cu->dev) == CUDA_SUCCESS)
		d->global_mem_bytes = total;
	/* double data rate: two transfers per memory clock */
	d->peak_bandwidth_gbs = 2.0 * d->mem_clock_khz * 1e3 * (d->mem_bus_width / 8.0) / 1e9;
	/* the data sheet's figure for a board in the table, else SMs x clock x rate */
	int n;
	const tinyc_device_info *t = tinyc_target_table(&n);
	for (int i = 0; i < n; i++)
		if (t[i].arch.major == d->arch.major && t[i].arch.minor == d->arch.minor &&
		    !t[i].arch.suffix && t[i].sm_count == d->sm_count)
			d->peak_fp16_tflops = t[i].peak_fp16_tflops;
	if (d->peak_fp16_tflops == 0)
		d->peak_fp16_tflops = (double)d->sm_count * d->clock_khz * 1e3 *
				      tinyc_fp16_flops_per_sm_clock(d->arch) / 1e12;
	CHECK(cu, DriverGetVersion, (&d->driver_version));
	d->is_real = 1;
	return 0;
}

/* Load the driver and make the device's primary context current. */
tinyc_cuda *tinyc_cuda_open(tinyc_ctx *ctx, int device)
{
	tinyc_cuda *cu = tinyc_calloc(ctx, 1, sizeof(*cu));
	if (!cu)
		return NULL;
	cu->ctx = ctx;
	const char *missing;
	cu->lib = load_driver(&cu->api, &missing);
	if (!cu->lib) {
		if (missing)
			tinyc_error(ctx, "NoGpu",
				    "the CUDA driver (libcuda.so.1) lacks %s; it is too old for tinyc",
				    missing);
		else
			tinyc_error(ctx, "NoGpu",
				    "no CUDA driver (libcuda.so.1 not found); this command needs an NVIDIA GPU");
		free(cu);
		return NULL;
	}
	void *tm = dlsym(cu->lib, "cuTensorMapEncodeTiled");	/* optional entry point */
	memcpy(&cu->TensorMapEncodeTiled, &tm, sizeof(tm));
	void *lx = dlsym(cu->lib, "cuLaunchKernelEx");	/* optional entry point */
	memcpy(&cu->LaunchKernelEx, &lx, sizeof(lx));
	cu->has_graphs = 1;
	for (size_t i = 0; i < sizeof(graph_symbols) / sizeof(graph_symbols[0]); i++) {
		void *p = dlsym(cu->lib, graph_symbols[i].name);	/* optional entry points */
		cu->has_graphs &= p != NULL;
		memcpy((char *)&cu->graph + graph_symbols[i].offset, &p, sizeof(p));
	}
	CUresult r = cu->api.Init(0);
	int count = 0;
	if (r == CUDA_SUCCESS)
		r = cu->api.DeviceGetCount(&count);
	if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0)) {
		tinyc_error(ctx, "NoGpu", "no CUDA device");
		goto fail;
	}
	if (r != CUDA_SUCCESS) {
		cuda_fail(cu, "cuInit", r, NULL);
		goto fail;
	}
	if (device < 0 || device >= count) {
		tinyc_error(ctx, "NoGpu", "no CUDA device %d (%d found)", device, count);
		goto fail;
	}
	if ((r = cu->api.DeviceGet(&cu->dev, device)) != CUDA_SUCCESS) {
		cuda_fail(cu, "cuDeviceGet", r, NULL);
		goto fail;
	}
	if (read_device_info(cu) < 0)
		goto fail;
	if ((r = cu->api.DevicePrimaryCtxRetain(&cu->pctx, cu->dev)) != CUDA_SUCCESS) {
		cuda_fail(cu, "cuDevicePrimaryCtxRetain", r, NULL);
		goto fail;
	}
	cu->generation = atomic_load(&context_generation);
	if ((r = cu->api.CtxSetCurrent(cu->pctx)) != CUDA_SUCCESS) {
		cuda_fail(cu, "cuCtxSetCurrent", r, NULL);
		cu->api.DevicePrimaryCtxRelease(cu->dev);
		goto fail;
	}
	return cu;
fail:
	dlclose(cu->lib);
	free(cu);
	return NULL;
}

/* Release the primary context and close the driver. */
void tinyc_cuda_close(tinyc_cuda *cu)
{
	if (!cu)
		return;
	cu->api.CtxSetCurrent(NULL);
	cu->api.DevicePrimaryCtxRelease(cu->dev);
	dlclose(cu->lib);
	free(cu);
}

const tinyc_device_info *tinyc_cuda_device_info(const tinyc_cuda *cu)
{
	return &cu->info;
}

/* Load an image with the driver (JIT-compiling PTX) and find one kernel in it. */
tinyc_kernel *tinyc_cuda_kernel_load(tinyc_cuda *cu, const tinyc_blob *image, const char *func)
{
	if (!image || !image->data || !image->size) {
		tinyc_error(cu->ctx, "CudaError", "cuModuleLoadDataEx: empty kernel image");
		return NULL;
	}
	tinyc_kernel *k = tinyc_calloc(cu->ctx, 1, sizeof(*k));
	if (!k)
		return NULL;
	k->cu = cu;
	k->generation = atomic_load(&context_generation);
	char *log = calloc(1, JIT_LOG_BYTES);
	CUjit_option jopt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *jval[2] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
	CUresult r = cu->api.ModuleLoadDataEx(&k->mod, image->data, log ? 2 : 0, jopt, jval);
	if (r != CUDA_SUCCESS) {
		char *extra = log && *log ? tinyc_asprintf("(JIT log: %s)", log) : NULL;
		cuda_fail(cu, "cuModuleLoadDataEx", r, extra);
		free(extra);
		free(log);
		free(k);
		return NULL;
	}
	free(log);
	r = cu->api.ModuleGetFunction(&k->fn, k->mod, func);
	if (r != CUDA_SUCCESS) {
		char *extra = tinyc_asprintf("(kernel '%s')", func);
		cuda_fail(cu, "cuModuleGetFunction", r, extra);
		free(extra);
		cu->api.ModuleUnload(k->mod);
		free(k);
		return NULL;
	}
	return k;
}

/* Unload a kernel's module (one loaded before a context reset is already gone). */
void tinyc_kernel_free(tinyc_kernel *k)
{
	if (!k)
		return;
	if (k->generation == atomic_load(&context_generation))	/* else reset: gone */
		k->cu->api.ModuleUnload(k->mod);
	free(k);
}

/* A kernel's register, shared and local memory use. */
int tinyc_kernel_get_attrs(tinyc_cuda *cu, tinyc_kernel *k, tinyc_kernel_attrs *out)
{
	*out = (tinyc_kernel_attrs){0};
	CHECK(cu, FuncGetAttribute, (&out->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn));
	CHECK(cu, FuncGetAttribute,
	      (&out->static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn));
	CHECK(cu, FuncGetAttribute, (&out->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn));
	CHECK(cu, FuncGetAttribute,
	      (&out->max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn));
	CHECK(cu, FuncGetAttribute,
	      (&out->binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION, k->fn));
	return 0;
}

static unsigned at_least_1(unsigned v)
{
	return v ? v : 1;
}

/* Mark k for programmatic dependent launch (runtime.h). */
void tinyc_kernel_set_pdl(tinyc_kernel *k, int on)
{
	k->pdl = on != 0;
}

/* Launch k on `stream`, opting in to large dynamic shared memory; a pdl kernel through
 * cuLaunchKernelEx with programmatic stream serialization (where the driver has it). */
static int launch_on(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
		     unsigned dyn_smem_bytes, void **args, CUstream stream)
{
	/* the default limit of dynamic shared memory is 48 KiB less the static part: a kernel
	 * of 18 KiB static and exactly 48 KiB dynamic (wgmma [64,64,64], 3 stages) needs the
	 * opt-in too, so opt in whenever the launch asks for more than the last opt-in */
	if (dyn_smem_bytes > (unsigned)k->dyn_smem_optin) {
		CHECK(cu, FuncSetAttribute, (k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					     (int)dyn_smem_bytes));
		k->dyn_smem_optin = (int)dyn_smem_bytes;
	}
	unsigned gx = at_least_1(grid.x), gy = at_least_1(grid.y), gz = at_least_1(grid.z);
	unsigned bx = at_least_1(block.x), by = at_least_1(block.y), bz = at_least_1(block.z);
	if (k->pdl && cu->LaunchKernelEx) {
		CUlaunchAttribute at;
		memset(&at, 0, sizeof(at));
		at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		at.value.programmaticStreamSerializationAllowed = 1;
		CUlaunchConfig c;
		memset(&c, 0, sizeof(c));
		c.gridDimX = gx, c.gridDimY = gy, c.gridDimZ = gz;
		c.blockDimX = bx, c.blockDimY = by, c.blockDimZ = bz;
		c.sharedMemBytes = dyn_smem_bytes, c.hStream = stream, c.attrs = &at, c.numAttrs = 1;
		CUresult r = cu->LaunchKernelEx(&c, k->fn, args, NULL);
		return r == CUDA_SUCCESS ? 0 : cuda_fail(cu, "cuLaunchKernelEx", r, NULL);
	}
	CHECK(cu, LaunchKernel, (k->fn, gx, gy, gz, bx, by, bz, dyn_smem_bytes, stream, args, NULL));
	return 0;
}

/* Launch a kernel on the current stream (the default one outside a graph capture). */
int tinyc_cuda_launch(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
		      unsigned dyn_smem_bytes, void **args)
{
	return launch_on(cu, k, grid, block, dyn_smem_bytes, args, cu->stream);
}

/* Allocate device memory (a zero-byte request gets one byte, so the pointer is valid). */
int tinyc_cuda_alloc(tinyc_cuda *cu, size_t bytes, tinyc_devptr *out)
{
	CUdeviceptr p = 0;
	*out = 0;
	CHECK(cu, MemAlloc, (&p, bytes ? bytes : 1));
	*out = (tinyc_devptr)p;
	return 0;
}

int tinyc_cuda_free(tinyc_cuda *cu, tinyc_devptr p)
{
	if (p && cu->generation == atomic_load(&context_generation))	/* else reset: gone */
		CHECK(cu, MemFree, ((CUdeviceptr)p));
	return 0;
}

void tinyc_cuda_set_contained(tinyc_cuda *cu)
{
	cu->contained = 1;
}

int tinyc_cuda_faulted(const tinyc_cuda *cu)
{
	return cu->faulted;
}

int tinyc_cuda_stale(const tinyc_cuda *cu)
{
	return cu->generation != atomic_load(&context_generation);
}

int tinyc_cuda_renew(tinyc_cuda *cu)
{
	if (!tinyc_cuda_stale(cu))
		return 0;
	cu->generation = atomic_load(&context_generation);
	CHECK(cu, CtxSetCurrent, (cu->pctx));
	return 0;
}

int tinyc_cuda_mem_info(tinyc_cuda *cu, int64_t *free_bytes, int64_t *total_bytes)
{
	size_t f = 0, t = 0;
	CHECK(cu, MemGetInfo, (&f, &t));
	*free_bytes = (int64_t)f;
	*total_bytes = (int64_t)t;
	return 0;
}

int tinyc_cuda_memory_check(tinyc_ctx *ctx, tinyc_cuda *cu, const char *what, int64_t need)
{
	int64_t avail, total;
	if (tinyc_cuda_mem_info(cu, &avail, &total) < 0 || need <= avail)
		return 0;	/* unknown: the allocation itself reports a failure */
	return tinyc_error(ctx, "OutOfMemory", "%s needs %" PRId64 " bytes, %" PRId64
			   " available on the GPU (%s, %" PRId64 " bytes in all)", what, need, avail,
			   cu->info.name, total);
}

int tinyc_gpu_memory_check(tinyc_ctx *ctx, const char *what, int64_t need)
{
	if (!tinyc_cuda_available())
		return 0;
	tinyc_ctx *quiet = tinyc_ctx_alloc();	/* a driver failure is the run's to report */
	tinyc_cuda *cu = quiet ? tinyc_cuda_open(quiet, 0) : NULL;
	int rc = cu ? tinyc_cuda_memory_check(ctx, cu, what, need) : 0;
	tinyc_cuda_close(cu);
	tinyc_ctx_free(quiet);
	return rc;
}

int tinyc_cuda_sync_kernel(tinyc_cuda *cu, const char *kernel)
{
	CUresult r = cu->api.CtxSynchronize();
	if (r == CUDA_SUCCESS)
		return 0;
	char *extra = tinyc_asprintf("in kernel '%s'", kernel);
	cuda_fail(cu, "cuCtxSynchronize", r, extra);
	free(extra);
	return -1;
}

int tinyc_cuda_upload(tinyc_cuda *cu, tinyc_devptr dst, const void *src, size_t bytes)
{
	if (bytes)
		CHECK(cu, MemcpyHtoD, ((CUdeviceptr)dst, src, bytes));
	return 0;
}

int tinyc_cuda_download(tinyc_cuda *cu, void *dst, tinyc_devptr src, size_t bytes)
{
	if (bytes)
		CHECK(cu, MemcpyDtoH, (dst, (CUdeviceptr)src, bytes));
	return 0;
}

int tinyc_cuda_copy(tinyc_cuda *cu, tinyc_devptr dst, tinyc_devptr src, size_t bytes)
{
	if (bytes)
		CHECK(cu, MemcpyDtoD, ((CUdeviceptr)dst, (CUdeviceptr)src, bytes));
	return 0;
}

int tinyc_cuda_memset8(tinyc_cuda *cu, tinyc_devptr dst, unsigned char value, size_t bytes)
{
	if (bytes)
		CHECK(cu, MemsetD8, ((CUdeviceptr)dst, value, bytes));
	return 0;
}

int tinyc_cuda_sync(tinyc_cuda *cu)
{
	CHECK(cu, CtxSynchronize, ());
	return 0;
}

/* What the timers below put between their two events: `calls` calls of fn, or one replay
 * of a graph. */
typedef struct timed_work {
	tinyc_launch_fn fn;	/* the call, or NULL for a graph replay */
	void *arg;		/* its argument */
	int calls;		/* how many times */
	CUgraphExec exec;	/* the graph, when fn is NULL */
} timed_work;

/* The two events of a timing; 0, or -1 with a diagnostic (none left to destroy). */
static int events_create(tinyc_cuda *cu, CUevent ev[2])
{
	CUresult r;
	ev[0] = ev[1] = NULL;
	for (int i = 0; i < 2; i++)
		if ((r = cu->api.EventCreate(&ev[i], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
			if (i)
				cu->api.EventDestroy(ev[0]);
			ev[0] = ev[1] = NULL;
			return cuda_fail(cu, "cuEventCreate", r, NULL);
		}
	return 0;
}

/* Destroy the events of events_create (NULL ones skipped). */
static void events_destroy(tinyc_cuda *cu, CUevent ev[2])
{
	for (int i = 0; i < 2; i++)
		if (ev[i])
			cu->api.EventDestroy(ev[i]);
}

/* `warmup` calls of fn, then a synchronisation; 0 or -1. */
static int warm_up(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int warmup)
{
	for (int i = 0; i < warmup; i++)
		if (fn(cu, arg) < 0)
			return -1;
	CUresult r = cu->api.CtxSynchronize();
	return r == CUDA_SUCCESS ? 0 : cuda_fail(cu, "cuCtxSynchronize", r, NULL);
}

/* Enqueue w between two events on stream st and wait: *ms = the time between them. */
static int event_span(tinyc_cuda *cu, CUevent ev[2], CUstream st, const timed_work *w, float *ms)
{
	CUresult r;
	const char *call = "cuEventRecord";
	*ms = 0;
	if ((r = cu->api.EventRecord(ev[0], st)) != CUDA_SUCCESS)
		goto fail;
	for (int i = 0; w->fn && i < w->calls; i++)
		if (w->fn(cu, w->arg) < 0)
			return -1;
	call = "cuGraphLaunch";
	if (!w->fn && (r = cu->graph.GraphLaunch(w->exec, st)) != CUDA_SUCCESS)
		goto fail;
	call = "cuEventRecord";
	if ((r = cu->api.EventRecord(ev[1], st)) != CUDA_SUCCESS)
		goto fail;
	call = "cuEventSynchronize";
	if ((r = cu->api.EventSynchronize(ev[1])) != CUDA_SUCCESS)
		goto fail;
	call = "cuEventElapsedTime";
	if ((r = cu->api.EventElapsedTime(ms, ev[0], ev[1])) != CUDA_SUCCESS)
		goto fail;
	return 0;
fail:
	return cuda_fail(cu, call, r, NULL);
}

/* Time fn between two events, iters times after warm-up; the median goes to *median_ms. */
int tinyc_cuda_time(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int warmup, int iters,
		    double *median_ms, double *times_ms)
{
	*median_ms = 0;
	if (iters < 1)
		return tinyc_error(cu->ctx, "InvalidArgument", "timing needs at least one iteration");
	double *t = tinyc_calloc(cu->ctx, (size_t)iters, sizeof(double));
	if (!t)
		return -1;
	CUevent ev[2];
	timed_work w = {fn, arg, 1, NULL};
	int ret = -1;
	if (events_create(cu, ev) < 0)
		goto done;
	if (warm_up(cu, fn, arg, warmup) < 0)
		goto done;
	for (int i = 0; i < iters; i++) {
		float ms;
		if (event_span(cu, ev, NULL, &w, &ms) < 0)
			goto done;
		t[i] = ms;
	}
	if (times_ms)
		memcpy(times_ms, t, (size_t)iters * sizeof(double));
	*median_ms = tinyc_median(t, iters);
	ret = 0;
done:
	events_destroy(cu, ev);
	free(t);
	return ret;
}

/* Time one run of `iters` back-to-back calls of fn between two events (after `warmup`
 * calls and a synchronisation): *per_call_ms = the elapsed time / iters.  The launches
 * queue up behind each other, so the gaps between kernels are the GPU's, not the host's,
 * as long as the host enqueues faster than the kernels run. */
int tinyc_cuda_time_run(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int warmup, int iters,
			double *per_call_ms)
{
	*per_call_ms = 0;
	if (iters < 1)
		return tinyc_error(cu->ctx, "InvalidArgument", "timing needs at least one iteration");
	CUevent ev[2];
	timed_work w = {fn, arg, iters, NULL};
	float ms;
	int ret = -1;
	if (events_create(cu, ev) < 0)
		return -1;
	if (warm_up(cu, fn, arg, warmup) == 0 && event_span(cu, ev, NULL, &w, &ms) == 0) {
		*per_call_ms = ms / iters;
		ret = 0;
	}
	events_destroy(cu, ev);
	return ret;
}

int tinyc_cuda_has_graphs(const tinyc_cuda *cu)
{
	return cu->has_graphs;
}

/* Capture `per_graph` calls of fn on a fresh stream into one CUDA graph, replay it once
 * untimed, then `replays` times each between two events: *per_call_ms = the median replay
 * time / per_graph.  No host launch overhead is in it: the whole graph is one submission. */
int tinyc_cuda_time_graph(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int per_graph,
			  int replays, double *per_call_ms)
{
	*per_call_ms = 0;
	if (!cu->has_graphs)
		return tinyc_error(cu->ctx, "CudaError", "the CUDA driver has no stream capture (graphs)");
	if (per_graph < 1 || replays < 1)
		return tinyc_error(cu->ctx, "InvalidArgument", "timing needs at least one iteration");
	const graph_api *g = &cu->graph;
	double *t = tinyc_calloc(cu->ctx, (size_t)replays, sizeof(double));
	if (!t)
		return -1;
	CUstream st = NULL;
	CUgraph graph = NULL;
	CUevent ev[2] = {NULL, NULL};
	timed_work w = {NULL, NULL, 0, NULL};
	CUresult r;
	const char *call = "cuStreamCreate";
	int ret = -1, fn_failed = 0;
	if ((r = g->StreamCreate(&st, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
		goto fail;
	call = "cuStreamBeginCapture";
	if ((r = g->StreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) != CUDA_SUCCESS)
		goto fail;
	cu->stream = st;
	for (int i = 0; i < per_graph && !fn_failed; i++)
		fn_failed = fn(cu, arg) < 0;
	cu->stream = NULL;
	call = "cuStreamEndCapture";	/* ends the capture also after a failed launch */
	r = g->StreamEndCapture(st, &graph);
	if (fn_failed)
		goto done;
	if (r != CUDA_SUCCESS)
		goto fail;
	call = "cuGraphInstantiate";
	if ((r = g->GraphInstantiate(&w.exec, graph, 0)) != CUDA_SUCCESS)
		goto fail;
	if (events_create(cu, ev) < 0)
		goto done;
	call = "cuGraphLaunch";
	if ((r = g->GraphLaunch(w.exec, st)) != CUDA_SUCCESS)	/* warm-up replay */
		goto fail;
	for (int i = 0; i < replays; i++) {
		float ms;
		if (event_span(cu, ev, st, &w, &ms) < 0)
			goto done;
		t[i] = ms;
	}
	*per_call_ms = tinyc_median(t, replays) / per_graph;
	ret = 0;
	goto done;
fail:
	cuda_fail(cu, call, r, NULL);
done:
	cu->stream = NULL;
	events_destroy(cu, ev);
	if (w.exec)
		g->GraphExecDestroy(w.exec);
	if (graph)
		g->GraphDestroy(graph);
	if (st) {
		g->StreamSynchronize(st);
		g->StreamDestroy(st);
	}
	free(t);
	return ret;
}

/* One kernel launch, as a tinyc_launch_fn closure. */
typedef struct launch_closure {
	tinyc_kernel *k;	/* the kernel */
	tinyc_dim3 grid;	/* grid extents */
	tinyc_dim3 block;	/* block extents */
	unsigned smem;		/* dynamic shared memory, bytes */
	void **args;		/* kernelParams */
} launch_closure;

static int launch_once(tinyc_cuda *cu, void *arg)
{
	launch_closure *c = arg;
	return tinyc_cuda_launch(cu, c->k, c->grid, c->block, c->smem, c->args);
}

/* Median time of one kernel launch. */
int tinyc_cuda_time_launch(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
			   unsigned dyn_smem_bytes, void **args, int warmup, int iters,
			   double *median_ms)
{
	launch_closure c = {k, grid, block, dyn_smem_bytes, args};
	return tinyc_cuda_time(cu, launch_once, &c, warmup, iters, median_ms, NULL);
}

/* ------------------------------------------------------------ tensor maps ---- */

int tinyc_cuda_tensor_map(tinyc_cuda *cu, void *map, tinyc_tmap_elem elem, int rank,
			  tinyc_devptr base, const uint64_t *dims, const uint64_t *strides_bytes,
			  const uint32_t *box, int swizzle_bytes)
{
	if (!cu->TensorMapEncodeTiled)
		return tinyc_error(cu->ctx, "CudaError", "the CUDA driver lacks cuTensorMapEncodeTiled "
				   "(TMA needs CUDA 12 or newer)");
	if (rank < 1 || rank > 5 || ((uintptr_t)map & 63))
		return tinyc_error(cu->ctx, "InvalidArgument", "tensor map: rank %d or storage alignment",
				   rank);
	CUtensorMapDataType dt = elem == TINYC_TMAP_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
				 : elem == TINYC_TMAP_F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
							 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	CUtensorMapSwizzle sw = swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
				: swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
				: swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
						      : CU_TENSOR_MAP_SWIZZLE_NONE;
	cuuint64_t d[5], st[4];
	cuuint32_t bx[5], es[5];
	for (int i = 0; i < rank; i++) {
		d[i] = dims[i];
		bx[i] = box[i];
		es[i] = 1;
		if (i + 1 < rank)
			st[i] = strides_bytes[i];
	}
	CUresult r = cu->TensorMapEncodeTiled((CUtensorMap *)map, dt, (cuuint32_t)rank,
					      (void *)(uintptr_t)base, d, st, bx, es,
					      CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
					      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
					      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS) {
		char extra[160];
		snprintf(extra, sizeof(extra), "(rank %d, address 0x%llx, dims %llu x %llu, box %u x %u)", rank,
			 (unsigned long long)base, (unsigned long long)d[0],
			 (unsigned long long)(rank > 1 ? d[1] : 1), bx[0], rank > 1 ? bx[1] : 1);
		return cuda_fail(cu, "cuTensorMapEncodeTiled", r, extra);
	}
	return 0;
}

/* ---- the caller's streams (the C API's tinyc_program_launch) ---- */

/* Launch a kernel on a stream of the caller's (a CUstream; NULL: the default stream). */
int tinyc_cuda_launch_async(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
			    unsigned dyn_smem_bytes, void **args, void *stream)
{
	return launch_on(cu, k, grid, block, dyn_smem_bytes, args, (CUstream)stream);
}

/* Make the device's primary context current on the calling thread. */
int tinyc_cuda_make_current(tinyc_cuda *cu)
{
	CHECK(cu, CtxSetCurrent, (cu->pctx));
	return 0;
}

/* Zero-fill (or fill with value) bytes at dst, enqueued on a stream (NULL: the default). */
int tinyc_cuda_memset8_async(tinyc_cuda *cu, tinyc_devptr dst, unsigned char value, size_t bytes,
			     void *stream)
{
	if (bytes)
		CHECK(cu, MemsetD8Async, ((CUdeviceptr)dst, value, bytes, (CUstream)stream));
	return 0;
}
