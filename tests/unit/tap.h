/* Minimal TAP for unit tests: each check is one test point.
 *   T_OK(cond, "what")        T_EQ(a, b, "what") for integers
 *   T_SKIP("reason")          return t_done();
 * tests/run counts the points of every test program. */
#ifndef DCPI_TAP_H
#define DCPI_TAP_H
#include <stdio.h>
#include <string.h>

static int t_n, t_failed;

#define T_OK(cond, ...) do { \
	int t_c_ = !!(cond); \
	printf("%sok %d - ", t_c_ ? "" : "not ", ++t_n); printf(__VA_ARGS__); printf("\n"); \
	if (!t_c_) { t_failed++; printf("# failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define T_EQ(a, b, ...) do { \
	long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
	T_OK(t_a_ == t_b_, __VA_ARGS__); \
	if (t_a_ != t_b_) printf("#   got %lld, want %lld\n", t_a_, t_b_); \
} while (0)

#define T_STREQ(a, b, ...) do { \
	const char *t_a_ = (a), *t_b_ = (b); \
	int t_e_ = t_a_ && t_b_ && !strcmp(t_a_, t_b_); \
	T_OK(t_e_, __VA_ARGS__); \
	if (!t_e_) printf("#   got \"%s\", want \"%s\"\n", t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)"); \
} while (0)

#define T_SKIP(...) do { printf("ok %d # SKIP ", ++t_n); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int t_done(void)
{
	printf("1..%d\n", t_n);
	return t_failed ? 1 : 0;
}
#endif
