/* Unit tests of the public C API (include/tinyc.h, api/capi.c): compile, describe, sizes,
 * runs on every CPU device, dumps, diagnostics and misuse.  Expected values are computed by
 * hand (in the comments) or by the reference evaluator through the API's "ref" device, which
 * shares no code with the "cpu" (RB-SSA) and "gpuir" (GPU IR interpreter) paths. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "include/tinyc.h"

/* Y = relu(X @ W + bias), float32 (examples/embed/linear_relu.uop). */
static const char linear[] =
	"%0  = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
	"%1  = BUFFER(slot=1, name=\"W\") : float[K,N]\n"
	"%2  = BUFFER(slot=2, name=\"bias\") : float[N]\n"
	"%3  = RESHAPE(%0, shape=[M,1,K]) : float[M,1,K]\n"
	"%4  = RESHAPE(%1, shape=[1,K,N]) : float[1,K,N]\n"
	"%5  = PERMUTE(%4, perm=[0,2,1]) : float[1,N,K]\n"
	"%6  = MUL(%3, %5) : float[M,N,K]\n"
	"%7  = REDUCE(%6, op=ADD, axes=[2]) : float[M,N,1]\n"
	"%8  = RESHAPE(%7, shape=[M,N]) : float[M,N]\n"
	"%9  = RESHAPE(%2, shape=[1,N]) : float[1,N]\n"
	"%10 = EXPAND(%9, shape=[M,N]) : float[M,N]\n"
	"%11 = ADD(%8, %10) : float[M,N]\n"
	"%12 = RELU(%11) : float[M,N]\n"
	"%13 = OUTPUT(%12, name=\"Y\") : float[M,N]\n";

static tinyc_context *ctx;

static void setup(void)
{
	ctx = tinyc_context_new();
	cr_assert(ctx);
}

static void teardown(void)
{
	tinyc_context_free(ctx);
}

TestSuite(capi, .init = setup, .fini = teardown);

/* Compile `text` for device with bind; asserts success. */
static tinyc_program *compile(const char *text, const char *device, const char *bind,
			      int runtime_sizes)
{
	tinyc_compile_options opt = {0};
	opt.device = device;
	opt.bind = bind;
	opt.runtime_sizes = runtime_sizes;
	tinyc_program *p = NULL;
	tinyc_status s = tinyc_program_compile(ctx, text, "linear.uop", &opt, &p);
	cr_assert_eq(s, TINYC_OK, "%s: %s", tinyc_status_name(s), tinyc_context_diagnostics(ctx));
	cr_assert(p);
	return p;
}

Test(capi, describes_inputs_and_outputs)
{
	tinyc_program *p = compile(linear, "cpu", "M=2,K=3", 0);
	cr_assert_eq(tinyc_program_num_inputs(p), 3);
	cr_assert_eq(tinyc_program_num_outputs(p), 1);
	cr_assert_str_eq(tinyc_program_device(p), "cpu");
	tinyc_tensor_info in, out;
	cr_assert_eq(tinyc_program_input_info(p, 1, &in), TINYC_OK);
	cr_assert_str_eq(in.name, "W");
	cr_assert_eq(in.type, TINYC_TYPE_FLOAT32);
	cr_assert_eq(in.elem_size, 4);
	cr_assert_eq(in.rank, 2);
	cr_assert_eq(in.shape[0], 3);		/* K bound */
	cr_assert_eq(in.shape[1], -1);		/* N not yet */
	cr_assert_str_eq(in.dim_symbol[1], "N");
	cr_assert_eq(in.storage, -1);
	cr_assert_eq(tinyc_program_set_sizes(p, "N=5"), TINYC_OK);
	cr_assert_eq(tinyc_program_output_info(p, 0, &out), TINYC_OK);
	cr_assert_str_eq(out.name, "Y");
	cr_assert_eq(out.shape[0], 2);
	cr_assert_eq(out.shape[1], 5);
	cr_assert_eq(out.storage, 10);
	cr_assert_eq(tinyc_program_find_input(p, "bias"), 2);
	cr_assert_eq(tinyc_program_find_output(p, "Y"), 0);
	cr_assert_eq(tinyc_program_find_output(p, "Z"), -1);
	cr_assert_eq(tinyc_program_input_info(p, 3, &in), TINYC_ERROR_USAGE);
	/* a compile-time size cannot change at run time */
	cr_assert_eq(tinyc_program_set_sizes(p, "M=4"), TINYC_ERROR_INPUT);
	cr_assert_str_eq(tinyc_context_error_kind(ctx), "InvalidBinding");
	tinyc_program_free(p);
}

Test(capi, runs_on_the_cpu_devices)
{
	/* X = [[1,2,3],[4,5,6]], W = [[1,-1],[0,2],[1,0]], bias = [-5,0.5]:
	 * X@W = [[4,3],[10,6]], + bias = [[-1,3.5],[5,6.5]], relu = [0,3.5,5,6.5] */
	float x[] = {1, 2, 3, 4, 5, 6}, w[] = {1, -1, 0, 2, 1, 0}, b[] = {-5, 0.5f};
	const float want[] = {0, 3.5f, 5, 6.5f};
	const void *in[] = {x, w, b};
	const char *devices[] = {"cpu", "ref", "gpuir"};
	for (int d = 0; d < 3; d++) {
		tinyc_program *p = compile(linear, devices[d], "M=2,K=3,N=2", 0);
		float y[4] = {-1, -1, -1, -1};
		void *out[] = {y};
		tinyc_status s = tinyc_program_run(p, in, out);
		cr_assert_eq(s, TINYC_OK, "%s: %s", devices[d], tinyc_context_diagnostics(ctx));
		for (int i = 0; i < 4; i++)
			cr_assert_float_eq(y[i], want[i], 1e-6, "%s: y[%d] = %g", devices[d], i, y[i]);
		/* CUDA calls on a program of another device are misuse */
		cr_assert_eq(tinyc_program_launch(p, NULL, NULL, NULL), TINYC_ERROR_USAGE);
		cr_assert_eq(tinyc_program_num_kernels(p), 0);
		tinyc_program_free(p);
	}
}

Test(capi, runtime_sizes_from_input_shapes)
{
	/* symbolic kernels; sizes from the shapes: X = I(3), bias = [0.5,-0.5]:
	 * Y = relu(W + bias) = [[1.5,0],[0.5,1.5],[1.5,0]] */
	float x[] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, w[] = {1, -1, 0, 2, 1, 0}, b[] = {0.5f, -0.5f};
	const float want[] = {1.5f, 0, 0.5f, 1.5f, 1.5f, 0};
	int64_t xs[] = {3, 3}, ws[] = {3, 2}, bs[] = {2};
	const int64_t *shapes[] = {xs, ws, bs};
	int ranks[] = {2, 2, 1};
	const void *in[] = {x, w, b};
	const char *devices[] = {"cpu", "gpuir"};
	for (int d = 0; d < 2; d++) {
		tinyc_program *p = compile(linear, devices[d], NULL, 0);
		float y[6];
		void *out[] = {y};
		/* nothing bound yet: the run says which size is missing */
		cr_assert_eq(tinyc_program_run(p, in, out), TINYC_ERROR_INPUT);
		cr_assert_str_eq(tinyc_context_error_kind(ctx), "UnboundSymbol");
		cr_assert_eq(tinyc_program_infer_sizes(p, 3, ranks, shapes), TINYC_OK,
			     "%s", tinyc_context_diagnostics(ctx));
		tinyc_tensor_info info;
		tinyc_program_output_info(p, 0, &info);
		cr_assert_eq(info.storage, 6);
		cr_assert_eq(tinyc_program_run(p, in, out), TINYC_OK, "%s", tinyc_context_diagnostics(ctx));
		for (int i = 0; i < 6; i++)
			cr_assert_float_eq(y[i], want[i], 1e-6);
		/* inconsistent shapes: K = 3 from X, 4 from W */
		int64_t ws2[] = {4, 2};
		const int64_t *bad[] = {xs, ws2, bs};
		cr_assert_eq(tinyc_program_infer_sizes(p, 3, ranks, bad), TINYC_ERROR_INPUT);
		cr_assert_str_eq(tinyc_context_error_kind(ctx), "InconsistentBinding");
		tinyc_program_free(p);
	}
	/* runtime_sizes: bind given at compile time reaches only the run */
	tinyc_program *p = compile(linear, "gpuir", "M=3,K=3,N=2", 1);
	tinyc_tensor_info info;
	tinyc_program_output_info(p, 0, &info);
	cr_assert_eq(info.storage, 6);
	char *gpuir = NULL;
	cr_assert_eq(tinyc_program_dump(p, "gpuir", &gpuir), TINYC_OK);
	cr_assert(strstr(gpuir, "M"), "symbolic kernels name their sizes");
	tinyc_string_free(gpuir);
	tinyc_program_free(p);
}

Test(capi, dumps_and_cuda_source)
{
	tinyc_program *p = compile(linear, "cpu", "M=64,K=32,N=16", 0);
	char *uop = NULL, *sched = NULL, *cuda = NULL, *none = (char *)1;
	cr_assert_eq(tinyc_program_dump(p, "uop", &uop), TINYC_OK);
	cr_assert(strstr(uop, "REDUCE"));
	cr_assert_eq(tinyc_program_dump(p, "schedule", &sched), TINYC_OK,
		     "%s", tinyc_context_diagnostics(ctx));
	cr_assert(strstr(sched, "kernel"));
	cr_assert_eq(tinyc_program_cuda_source(p, &cuda), TINYC_OK, "%s", tinyc_context_diagnostics(ctx));
	cr_assert(strstr(cuda, "extern \"C\" __global__"));
	cr_assert_eq(tinyc_program_dump(p, "nosuch", &none), TINYC_ERROR_USAGE);
	cr_assert_null(none);
	cr_assert_str_eq(tinyc_context_error_kind(ctx), "UsageError");
	tinyc_string_free(uop);
	tinyc_string_free(sched);
	tinyc_string_free(cuda);
	tinyc_program_free(p);
}

Test(capi, diagnostics_of_bad_graphs)
{
	tinyc_program *p = (tinyc_program *)1;
	tinyc_status s = tinyc_program_compile(ctx, "%0 = BUFFER(slot=0, name=\"X\") : float[N]\n"
					       "%1 = FROB(%0) : float[N]\n", "bad.uop", NULL, &p);
	cr_assert_eq(s, TINYC_ERROR_INPUT);
	cr_assert_null(p);
	const char *d = tinyc_context_diagnostics(ctx);
	cr_assert(strstr(d, "bad.uop:2:"), "located: %s", d);
	cr_assert(strstr(d, "error: UnknownOp"), "%s", d);
	cr_assert_str_eq(tinyc_context_error_kind(ctx), "UnknownOp");
	/* the next call forgets them */
	tinyc_program *q = compile(linear, "cpu", NULL, 0);
	cr_assert_str_eq(tinyc_context_diagnostics(ctx), "");
	cr_assert_null(tinyc_context_error_kind(ctx));
	tinyc_program_free(q);
	/* misuse */
	tinyc_compile_options opt = {0};
	opt.device = "tpu";
	cr_assert_eq(tinyc_program_compile(ctx, linear, NULL, &opt, &p), TINYC_ERROR_USAGE);
	cr_assert_eq(tinyc_program_compile(ctx, NULL, NULL, NULL, &p), TINYC_ERROR_USAGE);
	cr_assert_eq(tinyc_program_compile(NULL, linear, NULL, NULL, &p), TINYC_ERROR_USAGE);
	cr_assert_eq(tinyc_program_run(NULL, NULL, NULL), TINYC_ERROR_USAGE);
	tinyc_program_free(NULL);
	tinyc_context_free(NULL);
}

Test(capi, types_and_names)
{
	cr_assert_str_eq(tinyc_type_name(TINYC_TYPE_FLOAT16), "half");
	cr_assert_eq(tinyc_type_size(TINYC_TYPE_FLOAT16), 2);
	cr_assert_str_eq(tinyc_type_name(TINYC_TYPE_UINT64), "ulong");
	cr_assert_eq(tinyc_type_size(TINYC_TYPE_BOOL), 1);
	cr_assert_null(tinyc_type_name((tinyc_type)99));
	cr_assert_str_eq(tinyc_status_name(TINYC_ERROR_NO_GPU), "TINYC_ERROR_NO_GPU");
	cr_assert_str_eq(tinyc_version(), "0.2.0");
}

/* The GPU isolation settings: checked arguments, a diagnostic for a bad time limit. */
Test(capi, gpu_isolation_settings)
{
	cr_assert_eq(tinyc_context_set_gpu_isolation(NULL, 1), TINYC_ERROR_USAGE);
	cr_assert_eq(tinyc_context_set_gpu_timeout(NULL, 1), TINYC_ERROR_USAGE);
	tinyc_context *ctx = tinyc_context_new();
	cr_assert_eq(tinyc_context_set_gpu_isolation(ctx, 0), TINYC_OK);
	cr_assert_eq(tinyc_context_set_gpu_timeout(ctx, 2.5), TINYC_OK);
	cr_assert_eq(tinyc_context_set_gpu_timeout(ctx, 0), TINYC_OK);
	cr_assert_eq(tinyc_context_set_gpu_timeout(ctx, -1), TINYC_ERROR_USAGE);
	cr_assert_str_eq(tinyc_context_error_kind(ctx), "UsageError");
	cr_assert(strstr(tinyc_context_diagnostics(ctx), "0 (none) or more seconds"));
	cr_assert_eq(tinyc_context_set_gpu_timeout(ctx, NAN), TINYC_ERROR_USAGE);
	cr_assert_eq(tinyc_context_set_gpu_isolation(ctx, 1), TINYC_OK);
	cr_assert_str_eq(tinyc_context_diagnostics(ctx), "");
	tinyc_context_free(ctx);
}
