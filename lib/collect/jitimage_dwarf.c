/* Source lines of a pseudo-image as DWARF 4: one compile unit over the
 * whole text and a line program with one sequence per function.  Only
 * what the line readers need: .debug_abbrev, .debug_info, .debug_line. */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitimage_priv.h"

static int uleb(struct dcpi_buf *b, uint64_t v)
{
	return dcpi_buf_put_varint(b, v);
}

static int sleb(struct dcpi_buf *b, int64_t v)
{
	int more = 1, err = 0;

	while (more && !err) {
		uint8_t byte = v & 0x7f;

		v >>= 7; /* arithmetic on every compiler we build with */
		more = !((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40)));
		err = dcpi_buf_put(b, &(uint8_t){ (uint8_t)(byte | (more ? 0x80 : 0)) }, 1);
	}
	return err;
}

static int u8(struct dcpi_buf *b, uint8_t v) { return dcpi_buf_put(b, &v, 1); }
static int u16(struct dcpi_buf *b, uint16_t v) { return dcpi_buf_put(b, &v, 2); }
static int u32(struct dcpi_buf *b, uint32_t v) { return dcpi_buf_put(b, &v, 4); }
static int u64(struct dcpi_buf *b, uint64_t v) { return dcpi_buf_put(b, &v, 8); }

static int put_abbrev(struct dcpi_buf *b)
{
	static const uint8_t a[] = {
		1, DW_TAG_compile_unit, DW_CHILDREN_no,
		DW_AT_name, DW_FORM_string, DW_AT_stmt_list, DW_FORM_sec_offset,
		DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_addr, 0, 0,
		0,
	};

	return dcpi_buf_put(b, a, sizeof(a));
}

static int put_info(struct dcpi_buf *b, uint64_t end)
{
	static const char name[] = "jit";
	uint32_t len = 2 + 4 + 1 + 1 + sizeof(name) + 4 + 8 + 8;

	return u32(b, len) ?: u16(b, 4) ?: u32(b, 0) ?: u8(b, 8) ?: uleb(b, 1) ?:
	       dcpi_buf_put(b, name, sizeof(name)) ?: u32(b, 0) ?: u64(b, DCPI_JITIMAGE_TEXT) ?:
	       u64(b, end);
}

/* The distinct file names, in first-seen order; idx[] per line. */
struct files {
	const char **name;
	size_t n;
};

static size_t file_index(struct files *fs, const char *file)
{
	for (size_t i = fs->n; i > 0; i--) /* recent first: lines of a function share files */
		if (!strcmp(fs->name[i - 1], file))
			return i - 1;
	if (fs->n >= DCPI_JITIMAGE_MAX_FILES)
		return SIZE_MAX;
	fs->name[fs->n] = file;
	return fs->n++;
}

static int set_address(struct dcpi_buf *b, uint64_t a)
{
	return u8(b, 0) ?: uleb(b, 9) ?: u8(b, DW_LNE_set_address) ?: u64(b, a);
}

/* One sequence per function: rows in offset order, then its end. */
static int put_rows(struct dcpi_buf *b, const struct dcpi_jit_func *f, uint64_t at,
		    struct files *fs)
{
	uint64_t last = 0;
	int64_t line = 1;
	size_t file = 0;
	int err = 0, rows = 0;

	for (size_t l = 0; l < f->nlines && !err; l++) {
		const struct dcpi_jit_line *x = &f->lines[l];
		size_t fi;

		if (x->offset >= f->size || (rows && x->offset < last) || !x->line || !x->file ||
		    !*x->file || (fi = file_index(fs, x->file)) == SIZE_MAX)
			continue;
		err = set_address(b, at + x->offset);
		if (!err && fi != file)
			err = u8(b, DW_LNS_set_file) ?: uleb(b, fi + 1);
		if (!err)
			err = u8(b, DW_LNS_advance_line) ?: sleb(b, (int64_t)x->line - line) ?:
			      u8(b, DW_LNS_copy);
		file = fi;
		line = x->line;
		last = x->offset;
		rows++;
	}
	if (!err && rows)
		err = set_address(b, at + f->size) ?: u8(b, 0) ?: uleb(b, 1) ?:
		      u8(b, DW_LNE_end_sequence);
	return err;
}

static int put_line(struct dcpi_buf *b, const struct dcpi_jit_func *f, size_t n,
		    const uint64_t *at, struct files *fs)
{
	static const uint8_t std_lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	struct dcpi_buf prog = DCPI_BUF_INIT, hdr = DCPI_BUF_INIT;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		if (f[i].nlines)
			err = put_rows(&prog, &f[i], at[i], fs);
	/* after version and header_length: what the header holds */
	if (!err)
		err = u8(&hdr, 1) ?: u8(&hdr, 1) ?: u8(&hdr, 1) ?: u8(&hdr, (uint8_t)-5) ?:
		      u8(&hdr, 14) ?: u8(&hdr, 13) ?: dcpi_buf_put(&hdr, std_lengths, 12) ?:
		      u8(&hdr, 0);
	for (size_t i = 0; i < fs->n && !err; i++)
		err = dcpi_buf_put(&hdr, fs->name[i], strlen(fs->name[i]) + 1) ?: uleb(&hdr, 0) ?:
		      uleb(&hdr, 0) ?: uleb(&hdr, 0);
	if (!err)
		err = u8(&hdr, 0);
	if (!err)
		err = u32(b, (uint32_t)(2 + 4 + hdr.len + prog.len)) ?: u16(b, 4) ?:
		      u32(b, (uint32_t)hdr.len) ?: dcpi_buf_put(b, hdr.data, hdr.len) ?:
		      dcpi_buf_put(b, prog.data, prog.len);
	dcpi_buf_release(&prog);
	dcpi_buf_release(&hdr);
	return err;
}

int dcpi_jitimage_dwarf(const struct dcpi_jit_func *f, size_t n, const uint64_t *at,
			uint64_t end, struct dcpi_buf dw[3], int *any)
{
	struct files fs = { NULL, 0 };
	size_t total = 0;
	int err;

	*any = 0;
	for (size_t i = 0; i < n; i++)
		total += f[i].nlines;
	if (!total)
		return 0;
	fs.name = calloc(total < DCPI_JITIMAGE_MAX_FILES ? total : DCPI_JITIMAGE_MAX_FILES,
			 sizeof(*fs.name));
	if (!fs.name)
		return -ENOMEM;
	err = put_line(&dw[2], f, n, at, &fs);
	if (!err && fs.n) {
		*any = 1;
		err = put_abbrev(&dw[0]) ?: put_info(&dw[1], end);
	}
	if (!*any)
		dw[2].len = 0;
	free(fs.name);
	return err;
}
