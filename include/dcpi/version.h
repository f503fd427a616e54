/* The version of this build of dcpi (the VERSION file at build time):
 * printed by every command's -version, written into the daemon's log and
 * into each epoch's statistics, so a shared database says which build
 * wrote it. */
#ifndef DCPI_VERSION_H
#define DCPI_VERSION_H

/* "0.7.0"; never NULL. */
const char *dcpi_version(void);

#endif
