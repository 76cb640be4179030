/* SPDX-License-Identifier: BSD-2-Clause */
#include "identify.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto_net.h"
#include "status.h"
#include "utf8.h"
#include "varint.h"

/* The reference safetensors reader refuses headers over 100 MB: longer is not a header. */
#define SAFETENSORS_MAX_HEADER ((uint64_t)100000000)

const char *cb_file_kind_text(cblob_file_kind kind)
{
    switch (kind) {
    case CBLOB_FILE_NET: return "a Caffe net (.caffemodel)";
    case CBLOB_FILE_BLOB: return "a BlobProto (.binaryproto)";
    case CBLOB_FILE_BLOB_VECTOR: return "a BlobProtoVector";
    case CBLOB_FILE_NPY: return "a NumPy .npy file";
    case CBLOB_FILE_NPZ: return "a NumPy .npz file";
    case CBLOB_FILE_SAFETENSORS: return "a safetensors file";
    case CBLOB_FILE_NPY_FOLDER: return "a folder of .npy files";
    default: return "a file of no kind cblob reads";
    }
}

static bool starts_with(const uint8_t *bytes, size_t size, const char *magic, size_t length)
{
    return size >= length && memcmp(bytes, magic, length) == 0;
}

/* ---- text ------------------------------------------------------------------------------------ */

/* Text: UTF-8 without NUL and with almost no control characters in the first 4 KiB (a character
 * cut by the end of what was read counts as text). */
static bool is_text(const uint8_t *bytes, size_t size)
{
    const size_t n = size < 4096 ? size : 4096;
    size_t odd = 0;
    for (size_t i = 0; i < n;) {
        uint32_t point;
        const size_t length = cb_utf8_decode(bytes + i, n - i, &point);
        if (bytes[i] == 0 || (length == 0 && n - i > 3))
            return false;
        odd += bytes[i] < 0x20 && !isspace(bytes[i]);
        i += length > 0 ? length : 1;
    }
    return n > 0 && odd * 100 <= n;
}

/* A prototxt: after blank lines and # comments, an identifier followed by ':' or '{' ("name:",
 * "layer {", "input:", "base_lr:"). */
static bool is_prototxt(const uint8_t *bytes, size_t size)
{
    size_t at = 0;
    for (;;) {
        while (at < size && isspace(bytes[at]))
            ++at;
        if (at >= size || bytes[at] != '#')
            break;
        while (at < size && bytes[at] != '\n')
            ++at;
    }
    const size_t start = at;
    while (at < size && (isalnum(bytes[at]) || bytes[at] == '_'))
        ++at;
    if (at == start || isdigit(bytes[start]))
        return false;
    while (at < size && (bytes[at] == ' ' || bytes[at] == '\t'))
        ++at;
    return at < size && (bytes[at] == ':' || bytes[at] == '{');
}

/* ---- the kinds ------------------------------------------------------------------------------- */

/* safetensors: an 8-byte little-endian header length, then a JSON object. 0: not safetensors;
 * 1: it is; -1: a safetensors header cut short (the file is truncated). */
static int safetensors_state(const uint8_t *head, size_t size, uint64_t file_size)
{
    if (size < 10 || head[8] != '{')
        return 0;
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = length << 8 | head[i];
    if (length < 2 || length > SAFETENSORS_MAX_HEADER)
        return 0;
    return length <= file_size - 8 ? 1 : -1;
}

/* Whether the first field is one protobuf could have written: a tag of a valid wire type and
 * field number, and a value that fits. Any message file starts so; most other files do not. */
static bool starts_like_protobuf(const uint8_t *bytes, size_t size, uint64_t file_size)
{
    uint64_t tag, value;
    size_t length, at;
    if (cb_varint_decode(bytes, size, &tag, &length) != CB_VARINT_OK || tag >> 3 == 0 || tag >> 3 > 536870911)
        return false;
    at = length;
    switch (tag & 7) {
    case 0: return cb_varint_decode(bytes + at, size - at, &value, &length) == CB_VARINT_OK;
    case 1: return file_size - at >= 8;
    case 2: return cb_varint_decode(bytes + at, size - at, &value, &length) == CB_VARINT_OK &&
                   value <= file_size - at - length;
    case 3: return true;
    case 5: return file_size - at >= 4;
    default: return false;
    }
}

/* What a file that is of no kind cblob reads is, when it is something people give by mistake. */
static const char *what_else(const uint8_t *bytes, size_t size)
{
    if (starts_with(bytes, size, "\x89HDF\r\n\x1a\n", 8))
        return "an HDF5 file (Caffe's .caffemodel.h5 snapshots are HDF5), not a protobuf file";
    if (starts_with(bytes, size, "\x1f\x8b", 2))
        return "gzip-compressed: decompress it first (gunzip)";
    if (starts_with(bytes, size, "BZh", 3) || starts_with(bytes, size, "\xfd" "7zXZ", 6) ||
        starts_with(bytes, size, "\x28\xb5\x2f\xfd", 4))
        return "compressed (bzip2, xz or zstd): decompress it first";
    if (size > 262 && memcmp(bytes + 257, "ustar", 5) == 0)
        return "a tar archive: extract it first (tar -xf)";
    if (starts_with(bytes, size, "\x80\x02", 2) || starts_with(bytes, size, "\x80\x03", 2) ||
        starts_with(bytes, size, "\x80\x04", 2) || starts_with(bytes, size, "\x80\x05", 2))
        return "a Python pickle (a PyTorch or pycaffe file?), not a protobuf file";
    return NULL;
}

/* Whether the file is one people give by mistake (empty, a prototxt, a truncated safetensors,
 * HDF5, an archive, a pickle, text): then *message says what it is. */
static bool mistaken(const char *name, const uint8_t *head, size_t size, uint64_t file_size, char *message,
                     size_t message_size)
{
    const char *other = what_else(head, size);
    if (file_size == 0)
        snprintf(message, message_size, "%s is empty", name);
    else if (is_text(head, size) && is_prototxt(head, size))
        snprintf(message, message_size, "%s looks like a text-format prototxt (net definition); cblob reads binary "
                 ".caffemodel / .binaryproto files", name);
    else if (safetensors_state(head, size, file_size) < 0)
        snprintf(message, message_size, "%s is a truncated safetensors file: its header runs past the file's %" PRIu64
                 " bytes", name, file_size);
    else if (other != NULL)
        snprintf(message, message_size, "%s is %s", name, other);
    else if (is_text(head, size))
        snprintf(message, message_size, "%s is a text file, not a protobuf file; cblob reads binary .caffemodel / "
                 ".binaryproto files, .npy, .npz and .safetensors", name);
    else
        return false;
    return true;
}

/* The refusal of a file no reader takes; detail is the reader's own message (may be ""). */
static cblob_status explain(const char *name, const uint8_t *head, size_t size, uint64_t file_size, const char *detail)
{
    char said[768], message[768];
    snprintf(said, sizeof said, "%s", detail);
    if (mistaken(name, head, size, file_size, message, sizeof message))
        return cb_fail(CBLOB_ERR_PARSE, "%s", message);
    if (!starts_like_protobuf(head, size, file_size))
        return cb_fail(CBLOB_ERR_PARSE, "%s is not a protobuf file (%s)", name,
                       said[0] != '\0' ? said : "nor a .npy, .npz or .safetensors file");
    return cb_fail(CBLOB_ERR_PARSE, "%s is not a Caffe file cblob can read%s%s", name, said[0] != '\0' ? ": " : "", said);
}

cblob_status cb_identify(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                         cblob_file_kind *out)
{
    if (starts_with(head, head_size, "\x93NUMPY", 6)) {
        *out = CBLOB_FILE_NPY;
        return CBLOB_OK;
    }
    if (starts_with(head, head_size, "PK\x03\x04", 4) || starts_with(head, head_size, "PK\x05\x06", 4)) {
        *out = CBLOB_FILE_NPZ;
        return CBLOB_OK;
    }
    if (safetensors_state(head, head_size, file_size) > 0) {
        *out = CBLOB_FILE_SAFETENSORS;
        return CBLOB_OK;
    }
    /* A Caffe message, told from its first whole fields; what the detector says of anything else
     * is the detail of the refusal. */
    cblob_proto_kind kind = CBLOB_PROTO_NET;
    if (file_size == 0)
        return explain(name, head, head_size, file_size, "");
    cb_saved_error saved;
    cb_error_save(&saved);
    const cblob_status status = head_size == file_size ? cb_proto_detect_kind(head, head_size, &kind)
                                                       : cb_proto_detect_prefix(head, head_size, &kind);
    if (status == CBLOB_OK && starts_like_protobuf(head, head_size, file_size)) {
        cb_error_restore(&saved);
        *out = (cblob_file_kind)kind;
        return CBLOB_OK;
    }
    char detail[768];
    snprintf(detail, sizeof detail, "%s", status != CBLOB_OK ? cb_last_error_detail() : "");
    return explain(name, head, head_size, file_size, detail);
}

cblob_status cb_explain_refusal(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                                cblob_file_kind expected, cblob_status status)
{
    if (status != CBLOB_ERR_PARSE)
        return status;
    char detail[768], message[768];
    snprintf(detail, sizeof detail, "%s", cb_last_error_detail());
    if (mistaken(name, head, head_size, file_size, message, sizeof message))
        return cb_fail(CBLOB_ERR_PARSE, "%s (%s)", message, detail);
    cb_saved_error saved;
    cb_error_save(&saved);
    cblob_file_kind kind;
    const bool known = cb_identify(name, head, head_size, file_size, &kind) == CBLOB_OK;
    cb_error_restore(&saved);
    /* A Caffe message of another kind: the Caffe readers say so already. */
    if (!known || kind == expected || (kind <= CBLOB_FILE_BLOB_VECTOR && expected <= CBLOB_FILE_BLOB_VECTOR))
        return status;
    return cb_fail(CBLOB_ERR_PARSE, "%s is %s, not %s (%s)", name, cb_file_kind_text(kind), cb_file_kind_text(expected),
                   detail);
}

cblob_status cb_explain_bytes(const char *name, const uint8_t *bytes, size_t size, cblob_file_kind expected,
                              cblob_status status)
{
    return cb_explain_refusal(name, bytes, size < CB_IDENTIFY_HEAD_BYTES ? size : CB_IDENTIFY_HEAD_BYTES, size,
                              expected, status);
}
