/* The exact-count file's reader (dcpi/exact.h): each refusal on its own,
 * and the sums of duplicate records bounded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcpi/error.h"
#include "dcpi/exact.h"
#include "tap.h"

static char root[] = "/tmp/dcpi-test-exact.XXXXXX";
static const uint8_t bid[2] = { 0xab, 0xcd };

/* Read DB/exact/abcd holding "dcpi-exact 1\n" + body. */
static int read_body(const char *body, struct dcpi_exact *e)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/exact", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/exact/abcd", root);
	if (!(f = fopen(path, "w")))
		return -EIO;
	fprintf(f, "dcpi-exact 1\npath /bin/x\nbuildid abcd\n%s", body);
	fclose(f);
	return dcpi_exact_read(root, bid, sizeof(bid), e);
}

static void check_refused(const char *body, const char *says)
{
	struct dcpi_exact e;
	int err = read_body(body, &e);

	T_EQ(err, -EBADMSG, "refused: %.*s", (int)strcspn(body, "\n"), body);
	T_OK(err && strstr(dcpi_errmsg(), "/exact/abcd:4: ") && strstr(dcpi_errmsg(), says),
	     "names the file and line, says '%s': %s", says, err ? dcpi_errmsg() : "(read)");
	if (!err)
		dcpi_exact_free(&e);
}

int main(void)
{
	struct dcpi_exact e;
	char cmd[600];
	int err;

	if (!mkdtemp(root))
		return 1;
	/* sscanf's %llu took these: "-1" became 2^64 - 1, printed 18446744073709551616 */
	check_refused("i 1000 -1\n", "not a count record");
	check_refused("i 1000 +1\n", "not a count record");
	check_refused("i -1000 1\n", "not a count record");
	check_refused("i 1000  1\n", "not a count record");
	check_refused("i 1000 1 \n", "not a count record");
	check_refused("j 1000 2000 -5\n", "not a count record");
	check_refused("i 1000 18446744073709551616\n", "not a count record");
	check_refused("i 10000000000000000 1\n", "not a count record");
	check_refused("i 1000 9007199254740992\n", "count 9007199254740992 is above 2^53 - 1");
	check_refused("j 1000 2000 9007199254740992\n", "above 2^53 - 1");
	check_refused("runs 0\n", "runs is not a count above 0");
	check_refused("runs -1\n", "runs is not a count above 0");
	err = read_body("runs 2\ni 1000 9007199254740991\ni 1000 9007199254740991\n"
			"j 1000 2000 7\nj 1000 2000 8\n", &e);
	T_EQ(err, 0, "the largest count is read%s%s", err ? ": " : "", err ? dcpi_errmsg() : "");
	if (!err) {
		T_EQ(e.runs, 2, "runs");
		T_EQ(dcpi_exact_count(&e, 0x1000), UINT64_C(18014398509481982),
		     "duplicate records add up");
		T_OK(e.njumps == 1 && e.jumps[0].from == 0x1000 && e.jumps[0].to == 0x2000 &&
		     e.jumps[0].count == 15, "jumps read and added");
		dcpi_exact_free(&e);
	}
	e = (struct dcpi_exact){ 0 };
	dcpi_exact_add_insn(&e, 0x10, UINT64_MAX);
	dcpi_exact_add_insn(&e, 0x10, 5);
	dcpi_exact_sort(&e);
	T_EQ(dcpi_exact_count(&e, 0x10), UINT64_MAX, "a sum past 2^64 saturates, never wraps");
	dcpi_exact_free(&e);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("# could not remove %s\n", root);
	return t_done();
}
