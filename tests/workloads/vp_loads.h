/* Loops of loads for the value profiler's workloads (tests/e2e/vtrace_lib).
 *
 * Where a core takes a timer's interrupt in a loop of loads is the core's
 * choice: on an AMD EPYC (Zen) VM, perf annotate put 45% of a one-load
 * loop's samples on the add after the load, 51% on the instruction after
 * that and 2.7% on the load itself.  libdcpivp decodes forward from the
 * interrupted instruction to the next load before any jump (libdcpivp(7)),
 * so a loop of one load gave it 2% of its signals; the rest were "skipped
 * noload".  A turn of these loops makes eight loads, each followed by the
 * add of its value, so that from seven of eight places the next load comes
 * before the loop's branch.  The empty asm after each add keeps the compiler
 * from gathering the loads ahead of the adds; the loads are through one
 * pointer and a displacement, so that no register of an address is written
 * between them. */
#ifndef VP_LOADS_H
#define VP_LOADS_H

/* s += *p, kept in its place */
#define VP_ADD(s, p)                                   \
	do {                                           \
		(s) += *(p);                           \
		__asm__ volatile("" : "+r"(s));        \
	} while (0)

/* p[0] .. p[7], each added to s in turn */
#define VP_ADD8(s, p)                                                              \
	do {                                                                       \
		VP_ADD(s, (p) + 0); VP_ADD(s, (p) + 1); VP_ADD(s, (p) + 2);        \
		VP_ADD(s, (p) + 3); VP_ADD(s, (p) + 4); VP_ADD(s, (p) + 5);        \
		VP_ADD(s, (p) + 6); VP_ADD(s, (p) + 7);                            \
	} while (0)

/* *p eight times */
#define VP_ADD8_SAME(s, p)                                                         \
	do {                                                                       \
		VP_ADD(s, p); VP_ADD(s, p); VP_ADD(s, p); VP_ADD(s, p);            \
		VP_ADD(s, p); VP_ADD(s, p); VP_ADD(s, p); VP_ADD(s, p);            \
	} while (0)

#endif
