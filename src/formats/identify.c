/* SPDX-License-Identifier: BSD-2-Clause */
#include "identify.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_fields.h"
#include "context.h"
#include "status.h"
#include "utf8.h"
#include "varint.h"
#include "walk.h"

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
    case CB_FILE_TEXT_NET: return "a Caffe net in text format (.prototxt)";
    case CB_FILE_TEXT_BLOB: return "a BlobProto in text format";
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
static bool is_prototxt(const uint8_t *bytes, size_t size, size_t *name_at, size_t *name_length)
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
    *name_at = start;
    *name_length = at - start;
    while (at < size && (bytes[at] == ' ' || bytes[at] == '\t'))
        ++at;
    return at < size && (bytes[at] == ':' || bytes[at] == '{');
}

/* Whether a text's first field is a BlobProto's (num, channels, ..., shape, data, double_data):
 * no NetParameter field has one of those names, so the text is a blob's (a mean file as text). */
static bool is_blob_text(const uint8_t *bytes, size_t name_at, size_t name_length)
{
    char name[32];
    if (name_length >= sizeof name)
        return false;
    memcpy(name, bytes + name_at, name_length);
    name[name_length] = '\0';
    return protobuf_c_message_descriptor_get_field_by_name(&caffe__blob_proto__descriptor, name) != NULL;
}

/* ---- Caffe's messages: which one the bytes hold ---------------------------------------------- */

/* Whether a top-level field is one only a BlobProto has (legacy dims are varints there, and the
 * value fields are packed or fixed-width). */
static bool is_blob_field(uint32_t number, int type)
{
    if (cb_is_legacy_dim(number))
        return type == CB_WIRE_VARINT;
    switch (number) {
    case CB_BLOB_DATA: case CB_BLOB_DIFF: return type == CB_WIRE_FIXED32 || type == CB_WIRE_LENGTH;
    case CB_BLOB_SHAPE: return type == CB_WIRE_LENGTH;
    case CB_BLOB_DOUBLE_DATA: case CB_BLOB_DOUBLE_DIFF: return type == CB_WIRE_FIXED64 || type == CB_WIRE_LENGTH;
    default: return false;
    }
}

/* A NetParameter field that no BlobProto has: layer, layers, input, force_backward, debug_info. */
static bool is_net_field(uint32_t number, int type)
{
    switch (number) {
    case CB_NET_LAYER: case CB_NET_LAYERS: case CB_NET_INPUT: return type == CB_WIRE_LENGTH;
    case CB_NET_FORCE_BACKWARD: case CB_NET_DEBUG_INFO: return type == CB_WIRE_VARINT;
    default: return false;
    }
}

/* A field 1 payload that is a valid BlobProto with consistent counts: a vector's blob, not a
 * net's name (its values are not read). Trying a name fails on purpose, which must not replace
 * the caller's message. */
static bool holds_blob(const cb_wire *top, const cb_wire_field *field)
{
    cb_blob_layout layout;
    cb_shape shape;
    const cb_wire_path path = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_nested(top, field, &path);
    wire.depth = 0;
    const bool blob = cb_blob_layout_scan(wire, &layout) == CBLOB_OK &&
                      cb_blob_layout_check(&layout, &path, cb_dtype_find(cb_blob_layout_dtype(&layout))->size, &shape) ==
                          CBLOB_OK;
    cb_error_restore(&saved);
    return blob;
}

/* A failed read of the next field that stopped at a length-delimited field running past the
 * bytes read (`end`): its tag is there, its payload is not (whole). */
static bool cut_length_field(cblob_status status, const cb_wire_field *field, size_t end)
{
    return status != CBLOB_OK && field->number != CB_WIRE_END && field->type == CB_WIRE_LENGTH &&
           field->payload <= end;
}

/* The first bytes of a field 1 cut by the end of what was read: whether they read as the start of
 * a BlobProto (known fields of the right wire types, none of the wrong ones). */
static bool starts_blob(const uint8_t *bytes, size_t from, size_t to)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_range(bytes, from, to - from, NULL);
    int64_t known = 0;
    bool wrong = false;
    cb_wire_field field;
    cblob_status status = CBLOB_OK;
    while (!wrong && (status = cb_wire_next(&wire, &field)) == CBLOB_OK && !cb_wire_at_end(&field)) {
        known += is_blob_field(field.number, field.type);
        wrong = field.number <= CB_BLOB_DOUBLE_DIFF && !is_blob_field(field.number, field.type);
    }
    /* A field cut in turn (a large blob's packed values come first, before its shape): its tag
     * tells, as the fields before a cut field do. */
    if (!wrong && cut_length_field(status, &field, to) && is_blob_field(field.number, field.type))
        ++known;
    cb_error_restore(&saved);
    return known > 0 && !wrong;
}

/* What the top-level fields seen so far say. */
typedef struct detection {
    bool net, blob, named, all_blobs, has_layers, has_values, unnameable;
    int64_t fields, entries;
} detection;

static void classify(detection *d, uint32_t number, int type, bool entry_is_blob, bool entry_has_nul)
{
    ++d->fields;
    d->net = d->net || is_net_field(number, type);
    d->blob = d->blob || is_blob_field(number, type);
    /* Layers make a net certain; values or a shape make a blob certain. The other fields of
     * either are single varints or strings that the other kind could hold too. */
    d->has_layers = d->has_layers || ((number == CB_NET_LAYER || number == CB_NET_LAYERS) && type == CB_WIRE_LENGTH);
    d->has_values = d->has_values || (number >= CB_BLOB_DATA && is_blob_field(number, type));
    const bool entry = number == CB_NET_NAME && type == CB_WIRE_LENGTH;
    d->all_blobs = d->all_blobs && entry && entry_is_blob;
    d->named = d->named || (entry && !entry_is_blob);
    d->entries += entry;
    /* A net's name holds no NUL byte (its reader refuses one). */
    d->unnameable = d->unnameable || (entry && entry_has_nul);
}

/* Whether a field 1's payload holds a NUL byte: looked for in its first 64 KiB when the input is
 * read as needed (a blob's values nearly always hold one early). */
static bool has_nul(const cb_wire *wire, const cb_wire_field *field)
{
    size_t length = field->length;
    if (wire->need != NULL) {
        length = length < ((size_t)64 << 10) ? length : (size_t)64 << 10;
        if (wire->need(wire->source, field->payload, field->payload + length) != CBLOB_OK)
            return false;
    }
    return memchr(wire->input + field->payload, 0, length) != NULL;
}

/* The top level is malformed. When the fields before the fault already tell the kind, that
 * kind's reader fails on the same fault with a message naming the field ("BlobProto.data"). */
static cblob_status explain_failure(cb_source *source, const detection *d, cblob_status status)
{
    if (d->net) {
        if (cb_walk_net(source, NULL, NULL) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
    } else if (d->blob) {
        if (cb_walk_blob(source, NULL, NULL) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
    }
    return status;
}

/* The kind of the source's bytes, and whether a field only that kind has decided it (a name-only
 * net is a guess). A prefix is the start of a longer input: a field cut by its end ends the walk
 * (classified by its tag), and the fields before it decide; *undecided when they cannot (the
 * first field is cut), so that the caller may read more. */
static cblob_status detect(cb_source *source, bool prefix, cblob_proto_kind *out, bool *sure, bool *undecided)
{
    const cb_wire_path root = {.parent = NULL, .message = NULL, .index = -1};
    *undecided = false;
    if (source->size == 0)
        return cb_wire_fail(&root, NULL, 0, "the input is empty");
    cb_wire wire = cb_wire_begin(source->bytes, source->size, &root);
    if (source->file != NULL) {
        wire.need = cb_source_wire_need;
        wire.source = source;
    }
    detection d = {.all_blobs = true};
    for (;;) {
        cb_wire_field field;
        const cblob_status status = cb_wire_next(&wire, &field);
        if (prefix && cut_length_field(status, &field, source->size)) {
            /* A field cut by the end of the prefix: its tag tells what it is, and a field 1 its first
             * bytes, when they read as a BlobProto's; else the fields before it decide. */
            const bool entry = field.number == CB_NET_NAME;
            const bool entry_is_blob = entry && starts_blob(source->bytes, field.payload, source->size);
            if (!entry || entry_is_blob || d.fields == 0)
                classify(&d, field.number, field.type, entry_is_blob, false);
            *undecided = d.fields == 1 && entry; /* more bytes may make it whole */
            break;
        }
        if (status != CBLOB_OK && prefix && d.fields > 0)
            break;
        if (status != CBLOB_OK)
            return explain_failure(source, &d, status);
        if (cb_wire_at_end(&field))
            break;
        const bool entry = field.number == CB_NET_NAME && field.type == CB_WIRE_LENGTH;
        classify(&d, field.number, field.type, entry && holds_blob(&wire, &field), entry && has_nul(&wire, &field));
    }
    *sure = true;
    if (d.net)
        *out = CBLOB_PROTO_NET, *sure = d.has_layers;
    else if (d.blob) /* a BlobProto's field 1 is a varint, never a net's name */
        *out = CBLOB_PROTO_BLOB, *sure = d.has_values && d.entries == 0;
    else if (d.fields > 0 && d.all_blobs) /* one blob may be a net's name that reads as a blob too */
        *out = CBLOB_PROTO_BLOB_VECTOR, *sure = d.entries > 1 || d.unnameable;
    else if (d.named)
        *out = CBLOB_PROTO_NET, *sure = false; /* a net with a name and no layers */
    else
        return cb_wire_fail(&root, NULL, 0,
                            "holds none of the fields of a NetParameter, BlobProto or BlobProtoVector");
    return CBLOB_OK;
}

cblob_status cb_proto_detect_kind(const uint8_t *bytes, size_t size, cblob_proto_kind *out)
{
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    bool sure, undecided;
    return detect(&source, false, out, &sure, &undecided);
}

cblob_status cb_proto_detect_source(cb_source *source, cblob_proto_kind *out)
{
    bool sure, undecided;
    return detect(source, false, out, &sure, &undecided);
}

static const char *const proto_names[4] = {"", "NetParameter", "BlobProto", "BlobProtoVector"};

static cblob_status holds_other_kind(const cb_wire_path *root, cblob_proto_kind kind, cblob_proto_kind expected)
{
    return cb_wire_fail(root, NULL, 0, "the input holds a %s, not a %s", proto_names[kind], proto_names[expected]);
}

static const ProtobufCMessageDescriptor *proto_descriptor(cblob_proto_kind kind)
{
    return kind == CBLOB_PROTO_NET    ? &caffe__net_parameter__descriptor
           : kind == CBLOB_PROTO_BLOB ? &caffe__blob_proto__descriptor
                                      : &caffe__blob_proto_vector__descriptor;
}

cblob_status cb_explain_kind(const uint8_t *bytes, size_t size, bool prefix, cblob_proto_kind expected,
                             cblob_status status)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    cblob_proto_kind kind;
    bool sure = false, undecided = false;
    const cb_wire_path root = cb_wire_root(proto_descriptor(expected));
    if (size > 0 && detect(&source, prefix, &kind, &sure, &undecided) == CBLOB_OK && sure && kind != expected)
        return holds_other_kind(&root, kind, expected);
    cb_error_restore(&saved);
    return status;
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
    case CB_WIRE_VARINT: return cb_varint_decode(bytes + at, size - at, &value, &length) == CB_VARINT_OK;
    case CB_WIRE_FIXED64: return file_size - at >= 8;
    case CB_WIRE_LENGTH: return cb_varint_decode(bytes + at, size - at, &value, &length) == CB_VARINT_OK &&
                   value <= file_size - at - length;
    case CB_WIRE_GROUP_START: return true;
    case CB_WIRE_FIXED32: return file_size - at >= 4;
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
    size_t name_at = 0, name_length = 0;
    if (file_size == 0)
        snprintf(message, message_size, "%s is empty", name);
    else if (is_text(head, size) && is_prototxt(head, size, &name_at, &name_length) &&
             is_blob_text(head, name_at, name_length))
        snprintf(message, message_size, "%s looks like a BlobProto in text format; this reader takes binary "
                 ".binaryproto files (cblob_file_open and cblob_blob_create_from_prototxt_file read text)", name);
    else if (is_text(head, size) && is_prototxt(head, size, &name_at, &name_length))
        snprintf(message, message_size, "%s looks like a text-format prototxt (net definition); this reader takes "
                 "binary .caffemodel / .binaryproto files (cblob_file_open and cblob_model_open_prototxt_file read "
                 "text)", name);
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

/* cb_identify; *undecided when the head is the start of the file and ends inside its first field,
 * which more bytes may make whole. */
static cblob_status identify(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                             cblob_file_kind *out, bool *undecided)
{
    *undecided = false;
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
    /* A Caffe message, told from its first fields; what the detector says of anything else is the
     * detail of the refusal. */
    cblob_proto_kind kind = CBLOB_PROTO_NET;
    if (file_size == 0)
        return explain(name, head, head_size, file_size, "");
    size_t name_at = 0, name_length = 0;
    if (is_text(head, head_size) && is_prototxt(head, head_size, &name_at, &name_length)) {
        *out = is_blob_text(head, name_at, name_length) ? CB_FILE_TEXT_BLOB : CB_FILE_TEXT_NET;
        return CBLOB_OK;
    }
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_source source;
    cb_source_memory(&source, head, head_size, NULL);
    bool sure = false;
    const cblob_status status = detect(&source, head_size < file_size, &kind, &sure, undecided);
    if (status == CBLOB_OK && starts_like_protobuf(head, head_size, file_size)) {
        cb_error_restore(&saved);
        *out = (cblob_file_kind)kind;
        return CBLOB_OK;
    }
    char detail[768];
    snprintf(detail, sizeof detail, "%s", status != CBLOB_OK ? cb_last_error_detail() : "");
    return explain(name, head, head_size, file_size, detail);
}

cblob_status cb_identify(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                         cblob_file_kind *out)
{
    bool undecided;
    return identify(name, head, head_size, file_size, out, &undecided);
}

/* ---- the first bytes of a file ------------------------------------------------------------------ */

/* Reads the file's first bytes up to `size` into head (which holds the first head->size already). */
static cblob_status read_head(const char *name, const cb_input_file *file, size_t size, cb_file_head *head)
{
    const uint64_t file_size = cb_input_file_size(file);
    if (size > file_size)
        size = (size_t)file_size;
    if (size <= head->size)
        return CBLOB_OK;
    uint8_t *grown = cb_realloc(head->bytes, size + 1);
    if (grown == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to read the start of %s", name);
    head->bytes = grown;
    CB_TRY(cb_input_file_read(file, head->size, head->bytes + head->size, size - head->size));
    head->size = size;
    head->file_size = file_size;
    return CBLOB_OK;
}

cblob_status cb_read_head(const char *name, const cb_input_file *file, cb_file_head *out)
{
    cb_file_head head = {.file_size = cb_input_file_size(file)};
    const cblob_status status = read_head(name, file, CB_IDENTIFY_FIRST_BYTES, &head);
    if (status != CBLOB_OK) {
        cb_file_head_free(&head);
        return status;
    }
    *out = head;
    return CBLOB_OK;
}

cblob_status cb_identify_file(const char *name, const cb_input_file *file, cb_file_head *head, cblob_file_kind *out)
{
    CB_TRY(cb_read_head(name, file, head));
    bool undecided = false;
    cb_saved_error saved;
    cb_error_save(&saved);
    cblob_status status = identify(name, head->bytes, head->size, head->file_size, out, &undecided);
    if (undecided && head->size < head->file_size && head->size < CB_IDENTIFY_HEAD_BYTES) {
        cb_error_restore(&saved);
        status = read_head(name, file, CB_IDENTIFY_HEAD_BYTES, head);
        if (status == CBLOB_OK)
            status = identify(name, head->bytes, head->size, head->file_size, out, &undecided);
    }
    if (status != CBLOB_OK)
        cb_file_head_free(head);
    return status;
}

void cb_file_head_free(cb_file_head *head)
{
    free(head->bytes);
    *head = (cb_file_head){0};
}

/* Opens a file for reading: its first bytes read (and what they say, when kind is not NULL). */
static cblob_status reading_open(const cblob_context *context, const char *path, cb_file_reading *out,
                                 cblob_file_kind *kind)
{
    *out = (cb_file_reading){.name = path};
    if (context != NULL) {
        cb_context_begin_progress(context, CB_PROGRESS_READING, &out->progress);
        out->scoped = true;
    }
    cblob_status status = cb_input_file_open(path, &out->file);
    if (status == CBLOB_OK)
        status = cb_progress_size(cb_progress_current(CB_PROGRESS_READING), (int64_t)cb_input_file_size(out->file));
    if (status == CBLOB_OK)
        status = kind != NULL ? cb_identify_file(path, out->file, &out->head, kind)
                              : cb_read_head(path, out->file, &out->head);
    if (status == CBLOB_OK)
        status = cb_source_file(&out->source, out->file, out->head.bytes, out->head.size);
    if (status != CBLOB_OK)
        cb_file_reading_close(out);
    return status;
}

cblob_status cb_file_reading_open(const cblob_context *context, const char *path, cb_file_reading *out)
{
    return reading_open(context, path, out, NULL);
}

cblob_status cb_file_reading_identify(const cblob_context *context, const char *path, cb_file_reading *out,
                                      cblob_file_kind *kind)
{
    return reading_open(context, path, out, kind);
}

cblob_status cb_file_reading_finish(cb_file_reading *reading, cblob_file_kind expected, cblob_status status)
{
    if (status == CBLOB_OK)
        status = cb_source_check(&reading->source);
    if (status == CBLOB_OK && reading->scoped && reading->progress.fn != NULL)
        status = cb_progress_finish(&reading->progress);
    if (status == CBLOB_OK)
        return CBLOB_OK;
    if (status != CBLOB_ERR_PARSE)
        return status;
    status = cb_explain_refusal(reading->name, reading->head.bytes, reading->head.size, reading->head.file_size,
                                expected, status);
    const char *detail = cb_last_error_detail();
    if (strstr(detail, reading->name) != NULL)
        return status;
    char said[1024];
    snprintf(said, sizeof said, "%s", detail);
    return cb_fail(CBLOB_ERR_PARSE, "%s: %s", reading->name, said);
}

void cb_file_reading_close(cb_file_reading *reading)
{
    cb_source_close(&reading->source);
    cb_file_head_free(&reading->head);
    cb_input_file_close(reading->file);
    if (reading->scoped)
        (void)cb_progress_end(&reading->progress, CBLOB_OK);
    *reading = (cb_file_reading){0};
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
