/* GNU build-ids: from ELF files with libelf, and from the raw note files
 * the kernel exports (/sys/kernel/notes, /sys/module/NAME/notes/...).
 * See dcpi/buildid.h. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dcpi/error.h"
#include "dcpi/file.h"
#include "dcpi/profile.h"
#include "dcpi/buildid.h"

#define NOTES_FILE_MAX (64u << 10) /* /sys/kernel/notes is a few hundred bytes */

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Copy a found build-id out; ids longer than max are refused rather than
 * cut, because a truncated id would match nothing and mislead. */
static int take_id(const void *desc, size_t len, uint8_t *id, size_t max)
{
	if (len == 0)
		return 0;
	if (len > max)
		return dcpi_error(EOVERFLOW, "build-id of %zu bytes is longer than %zu", len, max);
	memcpy(id, desc, len);
	return (int)len;
}

/* Scan one Elf_Data of notes; returns the id length, 0 if none. */
static int notes_in_data(Elf_Data *data, uint8_t *id, size_t max)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0)
			return take_id((const char *)data->d_buf + desc_off, nh.n_descsz, id, max);
		off = next;
	}
	return 0;
}

static int id_from_sections(Elf *elf, uint8_t *id, size_t max)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int rc;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		rc = notes_in_data(data, id, max);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* For files without section headers (some stripped or hand-made ones). */
static int id_from_segments(Elf *elf, uint8_t *id, size_t max)
{
	size_t i, n;
	GElf_Phdr ph;
	int rc;

	if (elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		Elf_Data *data;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data || !data->d_buf)
			continue;
		rc = notes_in_data(data, id, max);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int dcpi_buildid_elf_fd(int fd, uint8_t *id, size_t max)
{
	Elf *elf;
	int rc;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return dcpi_error(ENOSYS, "libelf: %s", elf_errmsg(-1));
	/* read, not mapped: the file may be another user's, who could
	 * truncate it under us (SIGBUS in root's daemon) */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return dcpi_error(ENOEXEC, "not an ELF file: %s", elf_errmsg(-1));
	if (elf_kind(elf) != ELF_K_ELF) {
		rc = dcpi_error(ENOEXEC, "not an ELF file");
		goto out;
	}
	rc = id_from_sections(elf, id, max);
	if (rc == 0)
		rc = id_from_segments(elf, id, max);
out:
	elf_end(elf);
	return rc;
}

int dcpi_buildid_fd_is(int fd, const uint8_t *id, size_t idlen)
{
	uint8_t got[DCPI_BUILD_ID_MAX];
	int n;

	if (!idlen)
		return 1;
	n = dcpi_buildid_elf_fd(fd, got, sizeof(got));
	return n == (int)idlen && !memcmp(got, id, idlen);
}

int dcpi_buildid_elf(const char *path, uint8_t *id, size_t max)
{
	struct stat st;
	int fd, rc;

	fd = dcpi_file_open_regular(AT_FDCWD, path, 0, &st);
	if (fd < 0)
		return fd;
	rc = dcpi_buildid_elf_fd(fd, id, max);
	if (rc < 0)
		dcpi_error_prefix(-rc, "%s", path);
	close(fd);
	return rc;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

int dcpi_buildid_notes(const void *notes, size_t len, uint8_t *id, size_t max)
{
	const uint8_t *p = notes;
	size_t off = 0;

	/* Each note: u32 namesz, descsz, type; name and desc padded to 4. */
	while (len - off >= 12) {
		uint32_t h[3];
		size_t name_len, desc_len;

		memcpy(h, p + off, sizeof(h));
		off += 12;
		name_len = align4(h[0]);
		if (h[0] > len || name_len > len - off)
			return dcpi_error(EBADMSG, "note name runs past the end at byte %zu", off);
		desc_len = align4(h[1]);
		if (h[1] > len || desc_len > len - off - name_len)
			return dcpi_error(EBADMSG, "note data runs past the end at byte %zu", off);
		if (h[2] == NT_GNU_BUILD_ID && h[0] == 4 && memcmp(p + off, "GNU", 4) == 0)
			return take_id(p + off + name_len, h[1], id, max);
		off += name_len + desc_len;
	}
	return 0;
}

static int read_small_file(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
	int fd, rc = 0;
	ssize_t n;

	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return dcpi_error(errno, "%s: %s", path, strerror(errno));
	while (*len < cap) {
		n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = dcpi_error(errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			goto out;
		*len += (size_t)n;
	}
	rc = dcpi_error(EFBIG, "%s: larger than %zu bytes", path, cap);
out:
	close(fd);
	return rc;
}

int dcpi_buildid_notes_file(const char *path, uint8_t *id, size_t max)
{
	uint8_t *buf = malloc(NOTES_FILE_MAX);
	size_t len;
	int rc;

	if (!buf)
		return dcpi_error(ENOMEM, "%s: out of memory", path);
	rc = read_small_file(path, buf, NOTES_FILE_MAX, &len);
	if (rc < 0)
		goto out;
	rc = dcpi_buildid_notes(buf, len, id, max);
	if (rc < 0)
		dcpi_error_prefix(-rc, "%s", path);
out:
	free(buf);
	return rc;
}
