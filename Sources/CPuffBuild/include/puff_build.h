#ifndef PUFF_BUILD_H
#define PUFF_BUILD_H
/* What the build decided: the release, and where `make install` or the package puts the
 * setuid helper and the LDAP and TPM clients. The Makefile passes them (BUILD_DEFINES):
 * -DPUFF_VERSION=... -DPUFF_SBINDIR=... -DPUFF_LDAP_LIBRARY=... -DPUFF_TPM_LIBRARY=... */
const char *puff_build_version(void);
const char *puff_build_sbindir(void);
const char *puff_build_ldap_library(void);
const char *puff_build_tpm_library(void);
#endif
