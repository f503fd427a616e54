/* GNU build-ids: the identity of an image.  Read from ELF files with
 * libelf, and from the raw note files the kernel exports
 * (/sys/kernel/notes, /sys/module/NAME/notes/...).  The collector uses
 * these (the one part of the symbols layer it may), so they touch nothing
 * but the file named. */
#ifndef DCPI_BUILDID_H
#define DCPI_BUILDID_H

#include <stddef.h>
#include <stdint.h>

/* Read the GNU build-id note of an ELF file with libelf.  Returns its
 * length (> 0), 0 when the file has none, or -errno (-ENOEXEC: not ELF). */
int dcpi_buildid_elf(const char *path, uint8_t *id, size_t max);
int dcpi_buildid_elf_fd(int fd, uint8_t *id, size_t max);
/* 1 if the ELF file open at fd has build-id id (idlen 0: nothing to
 * check, 1), else 0: what a caller checks on the very descriptor it goes
 * on to read, never on a path opened again. */
int dcpi_buildid_fd_is(int fd, const uint8_t *id, size_t idlen);

/* The GNU build-id in a buffer of raw ELF notes (the format of
 * /sys/kernel/notes: u32 namesz, descsz, type, then name and desc each
 * padded to 4 bytes).  Length, 0 if none, -EBADMSG if a note is cut. */
int dcpi_buildid_notes(const void *notes, size_t len, uint8_t *id, size_t max);
/* The same for a file of raw notes. */
int dcpi_buildid_notes_file(const char *path, uint8_t *id, size_t max);

#endif
