/* The few TPM 2.0 operations Puff's tpm mode needs (docs/admin/protection-at-rest.md), through ESAPI
 * (libtss2-esys) with C signatures Swift can call: seal a 32-byte key in a persistent object,
 * unseal it, evict it. Nothing is kept between calls; every call opens the TCTI named by the
 * caller (puff.conf's `tpm_tcti`, in the TCTI loader's syntax) and closes it again.
 *
 * Two implementations of this header, as for the LDAP client (Sources/CLDAP):
 * - puff_tpm.c, the calls themselves, linked with libtss2-esys, -tctildr and -rc. The SwiftPM
 *   builds (puff-enroll, the tests) link it directly; `make` also builds it alone into
 *   puff-tpm.so, installed in $(LIBDIR)/puff/.
 * - puff_tpm_loader.c, for the Embedded Swift helper (puff-check): the same functions forward
 *   to puff-tpm.so, which `puff_tpm_load` opens the first time a sealed key is read.
 * The module (pam_puff.so) links neither and has no TPM code (its build leaves TPMClient.swift
 * out): libtss2 reads TSS2_LOG and TSS2_LOGFILE from the environment, which in a setuid host
 * (su) belongs to the user; in tpm mode the module hands the store work to the helper, which
 * starts with no environment at all. */
#ifndef PUFF_TPM_H
#define PUFF_TPM_H

#include <stddef.h>
#include <stdint.h>

/* puff-tpm.so is built with hidden visibility; only these entry points are exported. */
#define PUFF_TPM_API __attribute__((visibility("default")))

/* Results. */
#define PUFF_TPM_OK 0
/* The TCTI could not be opened or the TPM did not answer (no device, no simulator, a broken
 * connection, a timeout). */
#define PUFF_TPM_NO_TPM 1
/* The TPM answered with an error (no such object, another key, a policy that fails, an
 * owner password that is set...). */
#define PUFF_TPM_REFUSED 2
/* The description of a sealed object (`blob`) does not parse. */
#define PUFF_TPM_MALFORMED 3
/* puff_tpm_seal: the persistent handle already holds an object; `blob` then describes that
 * object, so that the caller can unseal it and see whether it holds the same key. */
#define PUFF_TPM_OCCUPIED 4
/* An output buffer is too small, or an argument out of range. */
#define PUFF_TPM_ARGUMENT 5
/* Returned by every call when the implementation could not be loaded (never a TPM code). */
#define PUFF_TPM_UNAVAILABLE (-1000)

/* The version of this interface; the loader refuses a puff-tpm.so of another one. */
#define PUFF_TPM_ABI 1
PUFF_TPM_API int puff_tpm_abi(void);

/* Whether the implementation is there: 1 when linked directly or already loaded, else 0. */
int puff_tpm_is_loaded(void);

/* Makes the implementation available (see puff_ldap_load: the caller walked the path of the
 * library from / and opened it without following a link; checked again here with fstat and
 * loaded through /proc/self/fd). 0, or PUFF_TPM_UNAVAILABLE with the reason in `error`. */
int puff_tpm_load(int fd, char *error, size_t size);

/* The largest description of a sealed object (two serialized ESYS_TRs and a header). */
#define PUFF_TPM_BLOB_MAX 4096
/* The largest key sealed. */
#define PUFF_TPM_KEY_MAX 64

/* Seals `key[0..<length]` in a keyed-hash object (fixedTPM, fixedParent, noDA, empty auth)
 * under the owner's storage primary at 0x81000001 (created as an ECC P-256 key and made
 * persistent there when that handle is empty), makes it persistent at `handle`, and writes
 * its description to `blob` (`*blob_length` bytes). With `pcr7`, the object opens only under
 * a policy on PCR 7 of the SHA-256 bank as it reads now (the Secure Boot state), not with its
 * empty auth. The key travels to the TPM encrypted (a session salted to the primary). */
PUFF_TPM_API int puff_tpm_seal(const char *tcti, uint32_t handle, int pcr7, const uint8_t *key, size_t length,
                               uint8_t *blob, size_t blob_size, size_t *blob_length, char *error, size_t error_size);

/* Unseals the object `blob` describes into `key` (`*key_length` bytes): two TPM commands
 * (StartAuthSession salted to the primary; Unseal with the response encrypted under that
 * session), three with PCR 7 (PolicyPCR between them). The TPM checks the object's name
 * (HMAC session) and the primary's key (the salt), so another TPM, another primary or another
 * object at the handle cannot answer. The caller wipes `key`. */
PUFF_TPM_API int puff_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_length,
                                 uint8_t *key, size_t key_size, size_t *key_length, char *error, size_t error_size);

/* Removes the persistent object `blob` describes (EvictControl with the owner's empty auth);
 * an object that is no longer there is no error. The primary stays (others may use it). */
PUFF_TPM_API int puff_tpm_evict(const char *tcti, const uint8_t *blob, size_t blob_length,
                                char *error, size_t error_size);

#endif
