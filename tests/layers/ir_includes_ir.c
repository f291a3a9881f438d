/* Compiled as ir/ is (tinyc_ir's include path): an include of ir/ itself compiles. */
#include "ir/uop.h"

int tinyc_layers_probe(void);

int tinyc_layers_probe(void)
{
	return TINYC_OP_ADD;
}
