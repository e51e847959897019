#include "puff_build.h"

#ifndef PUFF_VERSION
#define PUFF_VERSION "unreleased"
#endif
#ifndef PUFF_SBINDIR
#define PUFF_SBINDIR "/usr/local/sbin"
#endif
#ifndef PUFF_LDAP_LIBRARY
#define PUFF_LDAP_LIBRARY "/usr/local/lib/x86_64-linux-gnu/puff/puff-ldap.so"
#endif
#ifndef PUFF_TPM_LIBRARY
#define PUFF_TPM_LIBRARY "/usr/local/lib/x86_64-linux-gnu/puff/puff-tpm.so"
#endif

const char *puff_build_version(void) { return PUFF_VERSION; }
const char *puff_build_sbindir(void) { return PUFF_SBINDIR; }
const char *puff_build_ldap_library(void) { return PUFF_LDAP_LIBRARY; }
const char *puff_build_tpm_library(void) { return PUFF_TPM_LIBRARY; }
