/* libFuzzer target: the tinyc-uop text parser and the uop verifier.  Every input must end in
 * a graph or in diagnostics (each with a kind), never a crash, a hang or a leak. */
#include <stdint.h>
#include <stdlib.h>

#include "ir/uop.h"

/* Parse and verify one input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src = ctx ? tinyc_source_from_string("fuzz.uop", (const char *)data, size) : NULL;
	if (src) {
		tinyc_graph *g = tinyc_parse(ctx, src);
		if (g) {
			tinyc_verify(ctx, g, NULL);
			tinyc_graph_free(g);
		}
		if (tinyc_ctx_error_count(ctx) > 0 && !tinyc_ctx_diag(ctx, 0)->kind)
			abort();	/* every diagnostic has a kind */
	}
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
	return 0;
}
