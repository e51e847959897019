#ifndef PUFF_BUILD_H
#define PUFF_BUILD_H
/* What the build decided: the release and where `make install` or the package puts the
 * setuid helper. The Makefile passes them with -Xcc -DPUFF_VERSION=... -DPUFF_SBINDIR=... */
const char *puff_build_version(void);
const char *puff_build_sbindir(void);
#endif
