/* gen: write the htree CUDA text for one configuration (tinyc_htree_emit_cuda) to a file.
 *   gen OUT.cu r top_k max_top_nodes G K V float|half|bfloat16 threads [fast_max [mma [krot]]]
 * mma 1: the tensor-core leaves where the configuration allows them (else SIMT leaves);
 * krot 1: pass 3 and the top layer's leaves read the rotated top keys (krot_keys). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

int main(int argc, char **argv)
{
	if (argc < 10 || argc > 13) {
		fprintf(stderr, "usage: gen OUT.cu r top_k max_top_nodes G K V dtype threads [fast_max [mma [krot]]]\n");
		return 2;
	}
	tinyc_htree_kernel_config c;
	memset(&c, 0, sizeof c);
	c.compression_rate = atoi(argv[2]);
	c.top_k = atoi(argv[3]);
	c.max_top_nodes = atoll(argv[4]);
	c.G = atoi(argv[5]);
	c.K = atoi(argv[6]);
	c.V = atoi(argv[7]);
	c.dtype = tinyc_dtype_from_name(argv[8], (int)strlen(argv[8]));
	c.key_drop_bits = 13;
	c.threads = atoi(argv[9]);
	c.simt_leaves = argc >= 12 && atoi(argv[11]) ? 0 : 1;	/* mma: emulated, slow */
	c.krot_keys = argc == 13 ? atoi(argv[12]) : 0;
	c.fast_max = argc >= 11 ? atoi(argv[10]) : 0;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf b = {0};
	int rc = tinyc_htree_emit_cuda(ctx, &c, &b);
	tinyc_ctx_print_diags(ctx, stderr);
	FILE *f = rc == 0 ? fopen(argv[1], "w") : NULL;
	if (f) {
		fputs(b.data, f);
		fclose(f);
	}
	tinyc_buf_free(&b);
	tinyc_ctx_free(ctx);
	return f ? 0 : 1;
}
