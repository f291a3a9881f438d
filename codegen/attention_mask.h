/* Exact recognition of a causal attention mask (codegen/attention_mask.c). */
#ifndef TINYC_CODEGEN_ATTENTION_MASK_H
#define TINYC_CODEGEN_ATTENTION_MASK_H

#include "codegen/gpu.h"
#include "sched/attention.h"

/* Whether m's additive mask is, at every score (P..., i, j), 0 for j <= i + *off and -inf
 * elsewhere, whatever the batch index P (proven on the graph through em's value
 * emitter).  1 with *off set, or 0 (not proven: keep the general mask path). */
int tinyc_attn_causal_offset(tinyc_emit *em, const tinyc_attn_match *m, int64_t *off);

#endif
