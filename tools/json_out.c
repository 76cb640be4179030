/* SPDX-License-Identifier: BSD-2-Clause */
#include "json_out.h"

#include <string.h>

void json_out_start(json_out *out, json_out_write *write, void *context)
{
    out->write = write;
    out->context = context;
    out->depth = 0;
    out->after_key = out->failed = false;
    out->used = 0;
}

static void flush(json_out *out)
{
    if (!out->failed && out->used > 0 && out->write(out->pending, out->used, out->context) != 0)
        out->failed = true;
    out->used = 0;
}

static void emit(json_out *out, const char *text, size_t size)
{
    if (out->used + size > sizeof out->pending)
        flush(out);
    if (size > sizeof out->pending) {
        if (!out->failed && out->write(text, size, out->context) != 0)
            out->failed = true;
        return;
    }
    memcpy(out->pending + out->used, text, size);
    out->used += size;
}

bool json_out_finish(json_out *out)
{
    flush(out);
    return !out->failed;
}

/* The separator before an item (a value that follows its key has one already). */
static void next_item(json_out *out)
{
    if (out->depth > 0 && !out->after_key && out->has_items[out->depth - 1])
        emit(out, ", ", 2);
    if (out->depth > 0)
        out->has_items[out->depth - 1] = true;
    out->after_key = false;
}

void json_out_open(json_out *out, char bracket)
{
    next_item(out);
    emit(out, &bracket, 1);
    if (out->depth == JSON_OUT_DEPTH) {
        out->failed = true;
        return;
    }
    out->has_items[out->depth++] = false;
}

void json_out_close(json_out *out, char bracket)
{
    emit(out, &bracket, 1);
    if (out->depth > 0)
        --out->depth;
}

static int dump_text(const char *text, size_t size, void *data)
{
    json_out *out = data;
    emit(out, text, size);
    return out->failed ? -1 : 0;
}

static void dump(json_out *out, json_t *value)
{
    if (value == NULL || json_dump_callback(value, dump_text, out, TOOL_JSON_FLAGS) != 0)
        out->failed = true;
    json_decref(value);
}

void json_out_key(json_out *out, const char *key)
{
    next_item(out);
    dump(out, json_string(key));
    emit(out, ": ", 2);
    out->after_key = true;
}

void json_out_value(json_out *out, json_t *value)
{
    next_item(out);
    dump(out, value);
}
