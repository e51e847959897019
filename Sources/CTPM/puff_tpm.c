/* include/puff_tpm.h through ESAPI. A description ("blob") of a sealed object is
 *
 *     "PTPM" | version (1) | flags (bit 0: PCR 7 policy) | handle (4, big-endian)
 *     | length (2, BE) | the primary's serialized ESYS_TR | length (2, BE) | the object's
 *
 * A serialized ESYS_TR holds a handle and its public area (no secret): deserializing it sends
 * no command to the TPM, which is what keeps a login at two commands (three with PCR 7). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>
#include "puff_tpm.h"

#define PRIMARY_HANDLE 0x81000001u
#define FLAG_PCR7 1u
/* A TPM that does not answer within this is treated as absent (real discrete chips take
 * about 3 s to unseal and seconds to create an RSA primary). */
#define TIMEOUT_MS 30000

PUFF_TPM_API int puff_tpm_abi(void) { return PUFF_TPM_ABI; }
int puff_tpm_is_loaded(void) { return 1; }
int puff_tpm_load(int fd, char *error, size_t size) {
    (void)fd;
    if (size > 0) error[0] = 0;
    return 0;
}

static void say(char *error, size_t size, const char *what, TSS2_RC rc) {
    if (size == 0) return;
    if (rc == 0) {
        snprintf(error, size, "%s", what);
    } else {
        const char *text = Tss2_RC_Decode(rc);
        snprintf(error, size, "%s: %s (0x%x)", what, text ? text : "unknown error", (unsigned)rc);
    }
}

/* Errors from the TPM itself (its layer) are refusals; the TCTI's and ESAPI's own mean the TPM
 * could not be reached or did not answer properly. */
static int category(TSS2_RC rc) {
    if ((rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER) return PUFF_TPM_REFUSED;
    if ((rc & TSS2_RC_LAYER_MASK) == TSS2_RESMGR_TPM_RC_LAYER) return PUFF_TPM_REFUSED;
    return PUFF_TPM_NO_TPM;
}

/* The TPM's own response code without the handle/session/parameter number. */
static TSS2_RC base_code(TSS2_RC rc) {
    if ((rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return rc;
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3f)) : rc;
}

struct connection {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
};

static int connect_tpm(const char *tcti, struct connection *c, char *error, size_t size) {
    memset(c, 0, sizeof *c);
    /* libtss2 logs warnings to standard error by default (a missing object is an ordinary
     * answer here); the caller's message says what failed. An administrator's own TSS2_LOG
     * (puff-enroll) wins; the helper has no environment, so it is always quiet there. */
    setenv("TSS2_LOG", "all+none", 0);
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &c->tcti);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot open the TPM (tpm_tcti)", rc);
        return PUFF_TPM_NO_TPM;
    }
    rc = Esys_Initialize(&c->esys, c->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        Tss2_TctiLdr_Finalize(&c->tcti);
        say(error, size, "cannot start ESAPI over the TPM", rc);
        return PUFF_TPM_NO_TPM;
    }
    Esys_SetTimeout(c->esys, TIMEOUT_MS);
    return PUFF_TPM_OK;
}

static void disconnect(struct connection *c) {
    if (c->esys) Esys_Finalize(&c->esys);
    if (c->tcti) Tss2_TctiLdr_Finalize(&c->tcti);
}

static void put16(uint8_t *p, size_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* Writes the description of `object` under `primary`. */
static int describe(struct connection *c, ESYS_TR primary, ESYS_TR object, uint32_t handle, unsigned flags,
                    uint8_t *blob, size_t blob_size, size_t *blob_length, char *error, size_t size) {
    uint8_t *first = NULL, *second = NULL;
    size_t first_length = 0, second_length = 0;
    TSS2_RC rc = Esys_TR_Serialize(c->esys, primary, &first, &first_length);
    if (rc == TSS2_RC_SUCCESS) rc = Esys_TR_Serialize(c->esys, object, &second, &second_length);
    if (rc != TSS2_RC_SUCCESS) {
        free(first);
        say(error, size, "cannot serialize the TPM handles", rc);
        return PUFF_TPM_NO_TPM;
    }
    size_t total = 10 + 2 + first_length + 2 + second_length;
    int code = PUFF_TPM_OK;
    if (first_length > 0xffff || second_length > 0xffff || total > blob_size) {
        say(error, size, "the description of the sealed object is too large", 0);
        code = PUFF_TPM_ARGUMENT;
    } else {
        memcpy(blob, "PTPM", 4);
        blob[4] = 1;
        blob[5] = (uint8_t)flags;
        put32(blob + 6, handle);
        put16(blob + 10, first_length);
        memcpy(blob + 12, first, first_length);
        put16(blob + 12 + first_length, second_length);
        memcpy(blob + 14 + first_length, second, second_length);
        *blob_length = total;
    }
    free(first);
    free(second);
    return code;
}

/* The handles of a description, deserialized (no TPM command). */
static int read_description(struct connection *c, const uint8_t *blob, size_t length, ESYS_TR *primary,
                            ESYS_TR *object, unsigned *flags, uint32_t *handle, char *error, size_t size) {
    if (length < 14 || memcmp(blob, "PTPM", 4) != 0 || blob[4] != 1 || (blob[5] & ~FLAG_PCR7) != 0) {
        say(error, size, "the sealed key's description is malformed", 0);
        return PUFF_TPM_MALFORMED;
    }
    *flags = blob[5];
    *handle = ((uint32_t)blob[6] << 24) | ((uint32_t)blob[7] << 16) | ((uint32_t)blob[8] << 8) | blob[9];
    size_t first = ((size_t)blob[10] << 8) | blob[11];
    if (first > length - 14) goto malformed;
    size_t second = ((size_t)blob[12 + first] << 8) | blob[13 + first];
    if (second != length - 14 - first) goto malformed;
    if (Esys_TR_Deserialize(c->esys, blob + 12, first, primary) != TSS2_RC_SUCCESS) goto malformed;
    if (Esys_TR_Deserialize(c->esys, blob + 14 + first, second, object) != TSS2_RC_SUCCESS) {
        Esys_TR_Close(c->esys, primary);
        goto malformed;
    }
    return PUFF_TPM_OK;
malformed:
    say(error, size, "the sealed key's description is malformed", 0);
    return PUFF_TPM_MALFORMED;
}

static const TPMT_SYM_DEF session_cipher = {
    .algorithm = TPM2_ALG_AES, .keyBits = {.aes = 128}, .mode = {.aes = TPM2_ALG_CFB}};
static const TPML_PCR_SELECTION pcr7_selection = {
    .count = 1,
    .pcrSelections = {{.hash = TPM2_ALG_SHA256, .sizeofSelect = 3, .pcrSelect = {0x80, 0x00, 0x00}}}};

/* A session salted to `primary`: its key is known only to this process and to the TPM that
 * holds the primary's private key, so the parameters it encrypts are safe on the bus. The
 * session ends with the next command that uses it (continueSession clear). */
static TSS2_RC start_session(struct connection *c, ESYS_TR primary, TPM2_SE type, TPMA_SESSION attributes,
                             ESYS_TR *session) {
    TSS2_RC rc = Esys_StartAuthSession(c->esys, primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       NULL, type, &session_cipher, TPM2_ALG_SHA256, session);
    if (rc != TSS2_RC_SUCCESS) return rc;
    return Esys_TRSess_SetAttributes(c->esys, *session, attributes, 0xff);
}

/* The primary at 0x81000001: the one there when it is a storage key, else a new ECC P-256
 * one (the TCG's SRK template) made persistent there. */
static int storage_primary(struct connection *c, ESYS_TR *primary, char *error, size_t size) {
    TSS2_RC rc = Esys_TR_FromTPMPublic(c->esys, PRIMARY_HANDLE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, primary);
    if (rc == TSS2_RC_SUCCESS) {
        TPM2B_PUBLIC *public = NULL;
        rc = Esys_ReadPublic(c->esys, *primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &public, NULL, NULL);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, size, "cannot read the storage primary at 0x81000001", rc);
            return category(rc);
        }
        TPMA_OBJECT want = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM;
        int usable = (public->publicArea.objectAttributes & want) == want &&
                     (public->publicArea.objectAttributes & TPMA_OBJECT_SIGN_ENCRYPT) == 0;
        Esys_Free(public);
        if (!usable) {
            say(error, size, "the object at 0x81000001 is not a storage primary key", 0);
            return PUFF_TPM_REFUSED;
        }
        return PUFF_TPM_OK;
    }
    if (category(rc) != PUFF_TPM_REFUSED) {
        say(error, size, "cannot read the storage primary at 0x81000001", rc);
        return PUFF_TPM_NO_TPM;
    }
    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
        TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA |
        TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION none;
    memset(&none, 0, sizeof none);
    ESYS_TR transient = ESYS_TR_NONE;
    rc = Esys_CreatePrimary(c->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                            &template, &outside, &none, &transient, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot create the storage primary (is an owner password set?)", rc);
        return category(rc);
    }
    rc = Esys_EvictControl(c->esys, ESYS_TR_RH_OWNER, transient, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                           PRIMARY_HANDLE, primary);
    Esys_FlushContext(c->esys, transient);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot make the storage primary persistent at 0x81000001", rc);
        return category(rc);
    }
    return PUFF_TPM_OK;
}

/* The policy digest of PolicyPCR(PCR 7 as it reads now), from a trial session. */
static TSS2_RC pcr7_policy(struct connection *c, TPM2B_DIGEST *digest) {
    ESYS_TR trial = ESYS_TR_NONE;
    TSS2_RC rc = Esys_StartAuthSession(c->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                       NULL, TPM2_SE_TRIAL, &session_cipher, TPM2_ALG_SHA256, &trial);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_DIGEST empty;
    memset(&empty, 0, sizeof empty);
    rc = Esys_PolicyPCR(c->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &pcr7_selection);
    TPM2B_DIGEST *result = NULL;
    if (rc == TSS2_RC_SUCCESS) rc = Esys_PolicyGetDigest(c->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &result);
    if (rc == TSS2_RC_SUCCESS) *digest = *result;
    Esys_Free(result);
    Esys_FlushContext(c->esys, trial);
    return rc;
}

PUFF_TPM_API int puff_tpm_seal(const char *tcti, uint32_t handle, int pcr7, const uint8_t *key, size_t length,
                               uint8_t *blob, size_t blob_size, size_t *blob_length, char *error, size_t size) {
    if (size > 0) error[0] = 0;
    *blob_length = 0;
    if (length == 0 || length > PUFF_TPM_KEY_MAX || handle < TPM2_PERSISTENT_FIRST || handle >= TPM2_PLATFORM_PERSISTENT) {
        say(error, size, "the key or the handle is out of range", 0);
        return PUFF_TPM_ARGUMENT;
    }
    struct connection c;
    int code = connect_tpm(tcti, &c, error, size);
    if (code != PUFF_TPM_OK) return code;
    ESYS_TR primary = ESYS_TR_NONE, existing = ESYS_TR_NONE, transient = ESYS_TR_NONE, persistent = ESYS_TR_NONE;
    ESYS_TR session = ESYS_TR_NONE;
    TPM2B_PRIVATE *private = NULL;
    TPM2B_PUBLIC *public = NULL;
    code = storage_primary(&c, &primary, error, size);
    if (code != PUFF_TPM_OK) goto done;

    /* An object already at the handle: described for the caller, never replaced. */
    TSS2_RC rc = Esys_TR_FromTPMPublic(c.esys, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &existing);
    if (rc == TSS2_RC_SUCCESS) {
        TPM2B_PUBLIC *current = NULL;
        rc = Esys_ReadPublic(c.esys, existing, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, NULL, NULL);
        unsigned flags = 0;
        if (rc == TSS2_RC_SUCCESS && !(current->publicArea.objectAttributes & TPMA_OBJECT_USERWITHAUTH)) flags = FLAG_PCR7;
        Esys_Free(current);
        code = describe(&c, primary, existing, handle, flags, blob, blob_size, blob_length, error, size);
        if (code == PUFF_TPM_OK) {
            snprintf(error, size, "TPM handle 0x%08x already holds an object", handle);
            code = PUFF_TPM_OCCUPIED;
        }
        goto done;
    }

    TPM2B_SENSITIVE_CREATE sensitive;
    memset(&sensitive, 0, sizeof sensitive);
    memcpy(sensitive.sensitive.data.buffer, key, length);
    sensitive.sensitive.data.size = (UINT16)length;
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_KEYEDHASH;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    /* noDA: unsealing is never counted by the TPM's dictionary-attack protection, so nothing a
     * user types can lock the TPM (and LUKS with it) for everyone. */
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA;
    if (pcr7) {
        rc = pcr7_policy(&c, &template.publicArea.authPolicy);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, size, "cannot compute the PCR 7 policy", rc);
            code = category(rc);
            goto done;
        }
    } else {
        template.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH;
    }
    template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside;
    memset(&outside, 0, sizeof outside);
    TPML_PCR_SELECTION none;
    memset(&none, 0, sizeof none);
    /* The key goes to the TPM encrypted (decrypt: the first command parameter). */
    rc = start_session(&c, primary, TPM2_SE_HMAC, TPMA_SESSION_DECRYPT | TPMA_SESSION_CONTINUESESSION, &session);
    if (rc == TSS2_RC_SUCCESS)
        rc = Esys_Create(c.esys, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template, &outside, &none,
                         &private, &public, NULL, NULL, NULL);
    explicit_bzero(&sensitive, sizeof sensitive);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot seal the key", rc);
        code = category(rc);
        goto done;
    }
    rc = Esys_Load(c.esys, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, private, public, &transient);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot load the sealed key", rc);
        code = category(rc);
        goto done;
    }
    rc = Esys_EvictControl(c.esys, ESYS_TR_RH_OWNER, transient, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, handle,
                           &persistent);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot make the sealed key persistent", rc);
        code = category(rc);
        goto done;
    }
    code = describe(&c, primary, persistent, handle, pcr7 ? FLAG_PCR7 : 0, blob, blob_size, blob_length, error, size);
done:
    if (session != ESYS_TR_NONE) Esys_FlushContext(c.esys, session);
    if (transient != ESYS_TR_NONE) Esys_FlushContext(c.esys, transient);
    Esys_Free(private);
    Esys_Free(public);
    disconnect(&c);
    return code;
}

PUFF_TPM_API int puff_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_length,
                                 uint8_t *key, size_t key_size, size_t *key_length, char *error, size_t size) {
    if (size > 0) error[0] = 0;
    *key_length = 0;
    struct connection c;
    int code = connect_tpm(tcti, &c, error, size);
    if (code != PUFF_TPM_OK) return code;
    ESYS_TR primary = ESYS_TR_NONE, object = ESYS_TR_NONE, session = ESYS_TR_NONE;
    unsigned flags = 0;
    uint32_t handle = 0;
    TPM2B_SENSITIVE_DATA *data = NULL;
    code = read_description(&c, blob, blob_length, &primary, &object, &flags, &handle, error, size);
    if (code != PUFF_TPM_OK) goto done;
    /* 1: a session salted to the primary (the TPM decrypts the salt with the primary's private
     * key: another TPM or another primary fails here). The response is encrypted under it. */
    TSS2_RC rc = start_session(&c, primary, (flags & FLAG_PCR7) ? TPM2_SE_POLICY : TPM2_SE_HMAC, TPMA_SESSION_ENCRYPT,
                               &session);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "the TPM refused the session salted to its storage primary (another TPM, or cleared?)", rc);
        code = category(rc);
        goto done;
    }
    /* 2 (PCR 7 only): the policy. */
    if (flags & FLAG_PCR7) {
        TPM2B_DIGEST empty;
        memset(&empty, 0, sizeof empty);
        rc = Esys_PolicyPCR(c.esys, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &pcr7_selection);
        if (rc != TSS2_RC_SUCCESS) {
            say(error, size, "the TPM refused the PCR 7 policy", rc);
            code = category(rc);
            goto done;
        }
    }
    /* 3: the key. The HMAC session binds the object's name: another object at the handle fails. */
    rc = Esys_Unseal(c.esys, object, session, ESYS_TR_NONE, ESYS_TR_NONE, &data);
    if (rc != TSS2_RC_SUCCESS) {
        TSS2_RC base = base_code(rc);
        const char *what = base == TPM2_RC_POLICY_FAIL || base == TPM2_RC_PCR_CHANGED
            ? "the TPM refused to unseal the key: PCR 7 (the Secure Boot state) changed since it was sealed"
            : "the TPM refused to unseal the key (no such object at its handle, or another one)";
        snprintf(error, size, "%s [handle 0x%08x]", what, handle);
        size_t used = strlen(error);
        say(error + used, size - used, "", rc);
        code = category(rc);
        goto done;
    }
    /* A successful Unseal ended the session (continueSession clear): ESAPI forgot it. */
    session = ESYS_TR_NONE;
    if (data->size > key_size) {
        say(error, size, "the sealed key is longer than expected", 0);
        code = PUFF_TPM_ARGUMENT;
        goto done;
    }
    memcpy(key, data->buffer, data->size);
    *key_length = data->size;
done:
    if (data) {
        explicit_bzero(data, sizeof *data);
        Esys_Free(data);
    }
    if (session != ESYS_TR_NONE) Esys_FlushContext(c.esys, session);
    disconnect(&c);
    return code;
}

PUFF_TPM_API int puff_tpm_evict(const char *tcti, const uint8_t *blob, size_t blob_length, char *error, size_t size) {
    if (size > 0) error[0] = 0;
    struct connection c;
    int code = connect_tpm(tcti, &c, error, size);
    if (code != PUFF_TPM_OK) return code;
    ESYS_TR primary = ESYS_TR_NONE, described = ESYS_TR_NONE, current = ESYS_TR_NONE;
    unsigned flags = 0;
    uint32_t handle = 0;
    code = read_description(&c, blob, blob_length, &primary, &described, &flags, &handle, error, size);
    if (code != PUFF_TPM_OK) goto done;
    TSS2_RC rc = Esys_TR_FromTPMPublic(c.esys, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current);
    if (rc != TSS2_RC_SUCCESS) {
        /* Gone already (evicted, or the TPM was cleared): nothing to remove. */
        code = category(rc) == PUFF_TPM_REFUSED ? PUFF_TPM_OK : PUFF_TPM_NO_TPM;
        if (code != PUFF_TPM_OK) say(error, size, "cannot read the sealed key's handle", rc);
        goto done;
    }
    /* Only the object this description names is removed, never another one at its handle. */
    TPM2B_NAME *want = NULL, *have = NULL;
    rc = Esys_TR_GetName(c.esys, described, &want);
    if (rc == TSS2_RC_SUCCESS) rc = Esys_TR_GetName(c.esys, current, &have);
    int same = rc == TSS2_RC_SUCCESS && want->size == have->size && memcmp(want->name, have->name, want->size) == 0;
    Esys_Free(want);
    Esys_Free(have);
    if (!same) {
        snprintf(error, size, "TPM handle 0x%08x holds another object than the sealed key; left alone", handle);
        code = PUFF_TPM_REFUSED;
        goto done;
    }
    ESYS_TR gone = ESYS_TR_NONE;
    rc = Esys_EvictControl(c.esys, ESYS_TR_RH_OWNER, current, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, handle, &gone);
    if (rc != TSS2_RC_SUCCESS) {
        say(error, size, "cannot remove the sealed key from the TPM", rc);
        code = category(rc);
    }
done:
    disconnect(&c);
    return code;
}
