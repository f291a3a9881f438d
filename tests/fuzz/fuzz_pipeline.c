/* libFuzzer target: the whole pipeline, tinyc-uop text to CUDA text, for sm_80 and then
 * sm_90a, with every stage's verifier (--verify-each).  No GPU and no nvrtc: the CUDA text
 * is generated, not compiled (tests/lit/cuda compiles it).  Inputs above 64 KiB are skipped
 * (deep graphs have their own test: tests/reliability/deep_graph.py). */
#include <stdint.h>
#include <stdlib.h>

#include "driver/module.h"

/* Compile one input for one target, through the last stage. */
static void compile(const uint8_t *data, size_t size, const char *target)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src = ctx ? tinyc_source_from_string("fuzz.uop", (const char *)data, size) : NULL;
	tinyc_options opt = {0};
	opt.target = target;
	opt.verify_each = 1;
	tinyc_module *m = src ? tinyc_module_alloc(ctx, src, &opt) : NULL;
	int n;
	tinyc_pipeline(&n);
	if (m)
		tinyc_module_run_until(m, n - 1, 0, NULL);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

/* Compile one input for sm_80 and sm_90a. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	compile(data, size, "sm_80");
	compile(data, size, "sm_90a");
	return 0;
}
