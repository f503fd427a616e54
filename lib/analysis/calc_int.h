/* Private to the calc module (calc.c, calc_flow.c). */
#ifndef DCPI_CALC_INT_H
#define DCPI_CALC_INT_H

#include "dcpi/calc.h"

/* One block's estimate before reconciliation. */
struct calc_est {
	double w;            /* executions (relative units in mode TIME without a clock) */
	double support;      /* samples behind it (INFINITY: exact); mode TIME:
				the firm ones only (calc.c, struct interior) */
	double landed;       /* mode TIME: of support, the samples where a load's or
				a divide's stall lands (calc.c, stall_lands) */
	int stall_prone;     /* its cluster holds long-latency instructions */
	int has;             /* 0: no estimate: the graph decides */
	int zero;            /* no samples in its class: estimated 0, raised at a
			        cost that grows with the procedure's samples */
};

/* Reconcile est[] over c->cfg into c->blocks[].freq and c->edges[].count
 * by a minimum-cost circulation.  0, or flow errors. */
int calc_reconcile(enum dcpi_calc_mode mode, struct dcpi_calc *c, const struct calc_est *est);

#endif
