/*
 * model_select.c — module entry: magic block and load-time set-up.
 */
#include "postgres.h"

#include "fmgr.h"

#include <cblas.h>

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * The pthread build of OpenBLAS would start worker threads in every backend;
 * a backend is single-threaded and routes one row at a time, so keep BLAS
 * single-threaded (the server should also run with OPENBLAS_NUM_THREADS=1).
 */
void
_PG_init(void)
{
	openblas_set_num_threads(1);
}
