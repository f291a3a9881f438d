/* The stored index of an attention's output (codegen/attention_out.c). */
#ifndef TINYC_CODEGEN_ATTENTION_OUT_H
#define TINYC_CODEGEN_ATTENTION_OUT_H

#include "codegen/gpu.h"

/* The index out[] of node value, which is the P*V reduction pv under the ops of
 * tinyc_attn_out_step (sched/attention.h), for pv's index idx[].  0, or -1 when a
 * RESHAPE's sizes do not map (unknown or not grouping). */
int tinyc_attn_out_index(tinyc_emit *em, int value, int pv, tinyc_gexpr *const *idx,
			 tinyc_gexpr **out);

#endif
