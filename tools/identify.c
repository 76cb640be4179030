/* SPDX-License-Identifier: BSD-2-Clause */
/* What a file holds, from its first bytes: the kinds cblob reads, and, for the mistakes people
 * make (a text prototxt where the binary file belongs, an HDF5 snapshot, a compressed download),
 * a message that says what the file is before the protobuf reader's detail. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "tool.h"

static bool starts_with(const uint8_t *bytes, size_t size, const char *magic, size_t length)
{
    return size >= length && memcmp(bytes, magic, length) == 0;
}

/* safetensors: an 8-byte little-endian header length, then a JSON object that fits the file. */
static bool is_safetensors(const uint8_t *bytes, size_t size)
{
    if (size < 10 || bytes[8] != '{')
        return false;
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = length << 8 | bytes[i];
    return length >= 2 && length <= size - 8;
}

/* ---- text --------------------------------------------------------------------------------- */

/* Text: UTF-8 without NUL and with almost no control characters in the first 4 KiB. */
static bool is_text(const uint8_t *bytes, size_t size)
{
    uint8_t head[4096 + 4] = {0}; /* NUL-terminated, so a sequence cut at the end reads as cut */
    const size_t n = size < 4096 ? size : 4096;
    memcpy(head, bytes, n);
    size_t odd = 0;
    for (size_t i = 0; i < n;) {
        const size_t length = tool_utf8_length(head + i);
        if (head[i] == 0 || (length == 0 && n - i > 3))
            return false;
        odd += head[i] < 0x20 && !isspace(head[i]);
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

/* ---- protobuf ----------------------------------------------------------------------------- */

static bool read_varint(const uint8_t *bytes, size_t size, size_t *at, uint64_t *out)
{
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && *at < size; shift += 7) {
        const uint8_t byte = bytes[(*at)++];
        value |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *out = value;
            return true;
        }
    }
    return false;
}

/* Whether the first field is one protobuf could have written: a tag of a valid wire type and
 * field number, and a value that fits. Any message file starts so; most other files do not. */
static bool starts_like_protobuf(const uint8_t *bytes, size_t size)
{
    size_t at = 0;
    uint64_t tag, value;
    if (!read_varint(bytes, size, &at, &tag) || tag >> 3 == 0 || tag >> 3 > 536870911)
        return false;
    switch (tag & 7) {
    case 0: return read_varint(bytes, size, &at, &value);
    case 1: return size - at >= 8;
    case 2: return read_varint(bytes, size, &at, &value) && value <= size - at;
    case 3: return true;
    case 5: return size - at >= 4;
    default: return false;
    }
}

/* What a file that is no Caffe message is, when it is something people give by mistake. */
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
    if (starts_with(bytes, size, "\x80\x02", 2) || starts_with(bytes, size, "\x80\x04", 2))
        return "a Python pickle (a PyTorch or pycaffe file?), not a protobuf file";
    return NULL;
}

static cblob_status explain(const char *name, const uint8_t *bytes, size_t size)
{
    /* The reader's detail, said second. */
    char detail[1024];
    const char *message = cblob_last_error_message();
    const char *colon = strstr(message, ": ");
    snprintf(detail, sizeof detail, "%s", strncmp(message, "cblob_", 6) == 0 && colon != NULL ? colon + 2 : message);
    if (size == 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s is empty", name);
    if (is_text(bytes, size) && is_prototxt(bytes, size))
        return cb_fail(CBLOB_ERR_PARSE,
                       "%s looks like a text-format prototxt (net definition); cblob reads binary .caffemodel / "
                       ".binaryproto files",
                       name);
    const char *other = what_else(bytes, size);
    if (other != NULL)
        return cb_fail(CBLOB_ERR_PARSE, "%s is %s", name, other);
    if (is_text(bytes, size))
        return cb_fail(CBLOB_ERR_PARSE, "%s is a text file, not a protobuf file; cblob reads binary .caffemodel / "
                       ".binaryproto files (%s)", name, detail);
    if (!starts_like_protobuf(bytes, size))
        return cb_fail(CBLOB_ERR_PARSE, "%s is not a protobuf file (%s)", name, detail);
    return cb_fail(CBLOB_ERR_PARSE, "%s is not a Caffe file cblob can read: %s", name, detail);
}

cblob_status tool_identify(const char *name, const uint8_t *bytes, size_t size, tool_kind *out)
{
    if (starts_with(bytes, size, "\x93NUMPY", 6)) {
        *out = TOOL_KIND_NPY;
        return CBLOB_OK;
    }
    if (starts_with(bytes, size, "PK\x03\x04", 4) || starts_with(bytes, size, "PK\x05\x06", 4)) {
        *out = TOOL_KIND_NPZ;
        return CBLOB_OK;
    }
    if (is_safetensors(bytes, size)) {
        *out = TOOL_KIND_SAFETENSORS;
        return CBLOB_OK;
    }
    cblob_proto_kind kind;
    if (size == 0 || cblob_proto_detect(bytes, size, &kind) != CBLOB_OK)
        return explain(name, bytes, size);
    *out = (tool_kind)kind;
    return CBLOB_OK;
}
