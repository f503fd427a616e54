/* The JSON writer (dcpi/json.h): layout, escaping, numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/json.h"
#include "tap.h"

static char *buf;
static size_t len;

static struct dcpi_json *start(FILE **f)
{
	free(buf);
	buf = NULL;
	*f = open_memstream(&buf, &len);
	return dcpi_json_new(*f);
}

static const char *done(struct dcpi_json *j, FILE *f)
{
	dcpi_json_free(j);
	fclose(f);
	return buf;
}

static void test_layout(void)
{
	FILE *f;
	struct dcpi_json *j = start(&f);

	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "a", "x");
	dcpi_json_key(j, "b");
	dcpi_json_arr_begin(j);
	dcpi_json_u64(j, 1);
	dcpi_json_u64(j, 2);
	dcpi_json_arr_end(j);
	dcpi_json_break(j);
	dcpi_json_key(j, "rows");
	dcpi_json_arr_begin(j);
	for (int i = 0; i < 2; i++) {
		dcpi_json_break(j);
		dcpi_json_obj_begin(j);
		dcpi_json_key_bool(j, "ok", i);
		dcpi_json_obj_end(j);
	}
	dcpi_json_break(j);
	dcpi_json_arr_end(j);
	dcpi_json_key(j, "empty");
	dcpi_json_arr_begin(j);
	dcpi_json_arr_end(j);
	dcpi_json_obj_end(j);
	T_STREQ(done(j, f), "{\"a\": \"x\", \"b\": [1, 2],\n \"rows\": [\n  {\"ok\": false},\n"
		"  {\"ok\": true}\n ], \"empty\": []}\n", "separators, breaks, nesting");
}

static void test_escaping(void)
{
	FILE *f;
	struct dcpi_json *j = start(&f);

	dcpi_json_arr_begin(j);
	dcpi_json_str(j, "q\"b\\s/\n\t\x01\x7f é");
	dcpi_json_str(j, NULL);
	dcpi_json_strf(j, "0x%x", 255);
	dcpi_json_arr_end(j);
	T_STREQ(done(j, f), "[\"q\\\"b\\\\s/\\u000a\\u0009\\u0001\x7f é\", null, \"0xff\"]\n",
		"quotes, backslashes and control characters escaped; UTF-8 kept");
	j = start(&f);
	dcpi_json_obj_begin(j);
	dcpi_json_key_str(j, "k\"ey", "v");
	dcpi_json_obj_end(j);
	T_STREQ(done(j, f), "{\"k\\\"ey\": \"v\"}\n", "names escaped too");
}

/* Every control byte, one at a time, as \u00XX; the bytes around them
 * (space, DEL, UTF-8) as they are; in values, names and string lists. */
static void test_control_bytes(void)
{
	char in[3] = "a", want[96], name[3] = "k";
	const char *list[2] = { name, "\\" };
	int ok = 1;

	for (int c = 1; c < 0x20; c++) {
		FILE *f;
		struct dcpi_json *j = start(&f);

		in[1] = (char)c;
		name[1] = (char)c;
		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, name, in);
		dcpi_json_key_strs(j, "l", list, 2);
		dcpi_json_obj_end(j);
		snprintf(want, sizeof(want), "{\"k\\u%04x\": \"a\\u%04x\", \"l\": [\"k\\u%04x\", "
			 "\"\\\\\"]}\n", c, c, c);
		ok &= !strcmp(done(j, f), want);
		if (!ok) {
			printf("# byte 0x%02x: got %s", c, buf);
			break;
		}
	}
	T_OK(ok, "bytes 0x01..0x1f escaped as \\u00XX in values, names and lists");
	{
		FILE *f;
		struct dcpi_json *j = start(&f);

		dcpi_json_str(j, " \x7f\xc3\xa9\xe2\x82\xac");
		T_STREQ(done(j, f), "\" \x7f\xc3\xa9\xe2\x82\xac\"\n",
			"space, DEL and UTF-8 sequences kept as they are");
	}
}

/* Bytes that begin no well-formed UTF-8 sequence (a path's: Linux names
 * are bytes) become \ufffd each, so that strict parsers take the
 * document; well-formed sequences of every length stay as they are. */
static void test_bad_utf8(void)
{
	static const struct {
		const char *in, *want, *what;
	} c[] = {
		{ "/tmp/a\xff" "b", "\"/tmp/a\\ufffdb\"\n", "a lone 0xff" },
		{ "\xc3", "\"\\ufffd\"\n", "a lead byte at the end" },
		{ "\xc3(", "\"\\ufffd(\"\n", "a lead byte without its continuation" },
		{ "\x80\xbf", "\"\\ufffd\\ufffd\"\n", "continuation bytes alone" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"\n", "an overlong '/'" },
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"\n", "an overlong three-byte form" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"\n", "a surrogate (U+D800)" },
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"\n", "past U+10FFFF" },
		{ "\xf5\x80", "\"\\ufffd\\ufffd\"\n", "0xf5, never a lead byte" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"\n", "a sequence cut short by the end" },
		{ "\xe2\x82\xac\xf0\x9f\x98\x80\xed\x9f\xbf\xf4\x8f\xbf\xbf",
		  "\"\xe2\x82\xac\xf0\x9f\x98\x80\xed\x9f\xbf\xf4\x8f\xbf\xbf\"\n",
		  "well-formed three- and four-byte sequences at the edges kept" },
		{ "\xff\"\x01", "\"\\ufffd\\\"\\u0001\"\n", "beside the other escapes" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		FILE *f;
		struct dcpi_json *j = start(&f);

		dcpi_json_str(j, c[i].in);
		T_STREQ(done(j, f), c[i].want, "%s", c[i].what);
	}
	{
		FILE *f;
		struct dcpi_json *j = start(&f);

		dcpi_json_obj_begin(j);
		dcpi_json_key_str(j, "k\xfe", "v");
		dcpi_json_obj_end(j);
		T_STREQ(done(j, f), "{\"k\\ufffd\": \"v\"}\n", "names too");
	}
}

static void test_numbers(void)
{
	FILE *f;
	struct dcpi_json *j = start(&f);

	dcpi_json_arr_begin(j);
	dcpi_json_fixed(j, 12.34567, 4);
	dcpi_json_fixed(j, 2.5, 0);
	dcpi_json_fixed(j, NAN, 4);
	dcpi_json_fixed(j, INFINITY, 2);
	dcpi_json_i64(j, -7);
	dcpi_json_u64(j, UINT64_MAX);
	dcpi_json_arr_end(j);
	T_STREQ(done(j, f), "[12.3457, 2, null, null, -7, 18446744073709551615]\n",
		"fixed decimals; not-finite numbers are null");
}

/* Last: the mode is for the rest of the process. */
static void test_exact_numbers(void)
{
	FILE *f;
	struct dcpi_json *j = start(&f);
	double back;

	dcpi_json_exact_numbers();
	dcpi_json_arr_begin(j);
	dcpi_json_fixed(j, 11.434999999, 2);
	dcpi_json_fixed(j, 0.1, 4);
	dcpi_json_fixed(j, -0.0, 2);
	dcpi_json_fixed(j, NAN, 2);
	dcpi_json_arr_end(j);
	T_STREQ(done(j, f), "[11.434999999, 0.10000000000000001, 0, null]\n",
		"exact numbers: 17 significant digits whatever the decimals; -0 as 0; not finite null");
	j = start(&f);
	dcpi_json_fixed(j, 1.0 / 3, 2);
	T_OK(sscanf(done(j, f), "%lf", &back) == 1 && back == 1.0 / 3,
	     "exact numbers read back as the same double");
}

static void test_unbalanced(void)
{
	FILE *f;
	struct dcpi_json *j = start(&f);

	dcpi_json_obj_begin(j);
	dcpi_json_key(j, "a");
	dcpi_json_arr_begin(j);
	T_STREQ(done(j, f), "{\"a\": []}\n", "free closes what a caller left open");
}

int main(void)
{
	test_layout();
	test_escaping();
	test_control_bytes();
	test_bad_utf8();
	test_numbers();
	test_unbalanced();
	test_exact_numbers();
	free(buf);
	return t_done();
}
