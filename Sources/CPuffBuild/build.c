#include "puff_build.h"

#ifndef PUFF_VERSION
#define PUFF_VERSION "unreleased"
#endif
#ifndef PUFF_SBINDIR
#define PUFF_SBINDIR "/usr/local/sbin"
#endif

const char *puff_build_version(void) { return PUFF_VERSION; }
const char *puff_build_sbindir(void) { return PUFF_SBINDIR; }
