/* Compiled as ir/ is (tinyc_ir's include path): an include of an upper folder must fail to
 * compile ("sched/schedule.h: No such file or directory"). */
#include "ir/uop.h"
#include "sched/schedule.h"

int tinyc_layers_probe(void);

int tinyc_layers_probe(void)
{
	return (int)sizeof(tinyc_schedule);
}
