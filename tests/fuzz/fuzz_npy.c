/* libFuzzer target: the .npy reader, on the input as a file image (fmemopen). */
#include <stdint.h>
#include <stdio.h>

#include "ir/tensor.h"

/* Read one .npy image. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	if (!ctx || !size) {
		tinyc_ctx_free(ctx);
		return 0;
	}
	FILE *f = fmemopen((void *)data, size, "rb");
	if (f)
		tinyc_tensor_free(tinyc_npy_read_stream(ctx, f, "fuzz.npy"));
	tinyc_ctx_free(ctx);
	return 0;
}
