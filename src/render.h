/* Rendering DOT with Graphviz's dot, for the commands that draw graphs
 * (dcpicalc -svg, -pdf).  Printing and processes only: the graph comes
 * from libdcpi (dot.h). */
#ifndef DCPI_RENDER_H
#define DCPI_RENDER_H

#include <stdio.h>

#define RENDER_SECONDS 60   /* dot is killed after this long */

/* Run "dot -TFORMAT -o OUT", feed it what emit writes, and wait at most
 * RENDER_SECONDS.  Exits with an error naming the 'graphviz' package when
 * dot is not on PATH, and with dot's failure or the time limit otherwise. */
void render_dot(const char *format, const char *out, void (*emit)(FILE *f, void *arg),
		void *arg);

#endif
