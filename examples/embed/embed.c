/* embed.c: compile a graph with tinyc's C API and run it on the CPU.
 *
 *   Y = relu(X @ W + bias), X 2x3, W 3x2, sizes bound when compiling.
 *
 * Prints the output's description and values; exits 1 with tinyc's diagnostics on error.
 * Uses nothing but tinyc.h.
 */
#include <stdio.h>

#include <tinyc.h>

static const char graph[] =
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

/* Print tinyc's diagnostics for a failed call and return 1. */
static int fail(tinyc_context *ctx, tinyc_status s)
{
	fprintf(stderr, "embed: %s\n%s", tinyc_status_name(s), tinyc_context_diagnostics(ctx));
	return 1;
}

int main(void)
{
	float x[] = {1, 2, 3, 4, 5, 6};
	float w[] = {1, -1, 0, 2, 1, 0};
	float bias[] = {-5, 0.5f};
	float y[4];
	const void *in[] = {x, w, bias};
	void *out[] = {y};

	tinyc_context *ctx = tinyc_context_new();
	if (!ctx)
		return 1;
	tinyc_compile_options opt = {0};
	opt.bind = "M=2,K=3,N=2";
	opt.device = "cpu";
	tinyc_program *p = NULL;
	tinyc_status s = tinyc_program_compile(ctx, graph, "linear_relu.uop", &opt, &p);
	if (s != TINYC_OK)
		return fail(ctx, s);
	tinyc_tensor_info info;
	tinyc_program_output_info(p, 0, &info);
	printf("tinyc %s: output %s: %s[", tinyc_version(), info.name, tinyc_type_name(info.type));
	for (int d = 0; d < info.rank; d++)
		printf("%s%s=%lld", d ? "," : "", info.dim_symbol[d] ? info.dim_symbol[d] : "",
		       (long long)info.shape[d]);
	printf("]\n");
	if ((s = tinyc_program_run(p, in, out)) != TINYC_OK) {
		int rc = fail(ctx, s);
		tinyc_program_free(p);
		tinyc_context_free(ctx);
		return rc;
	}
	printf("Y =");
	for (int i = 0; i < 4; i++)
		printf(" %g", y[i]);
	printf("\n");
	tinyc_program_free(p);
	tinyc_context_free(ctx);
	return 0;
}
