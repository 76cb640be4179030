/* SPDX-License-Identifier: BSD-2-Clause */
/* Names and other text made safe for a terminal: valid UTF-8, control characters and the like
 * written as C escapes, cut to a number of columns or wrapped into a table's cell. Both the
 * commands (tool.h) and the progress line (terminal.h) show names, so this is a part of its own
 * that neither of them depends on. */
#ifndef CBLOB_TOOLS_TEXT_H
#define CBLOB_TOOLS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- text --------------------------------------------------------------------------------- */

/* The length of the valid UTF-8 character at text (1 for ASCII, NUL included), or 0. */
size_t tool_utf8_length(const unsigned char *text);
/* A copy of text that is valid UTF-8: each byte that is not becomes U+FFFD (as the library's JSON
 * does). NULL when memory ran out. */
char *tool_utf8(const char *text);
/* Text as a terminal may show it: control characters (escape sequences among them), C1 controls,
 * bidirectional overrides, backslashes and bytes that are not UTF-8 are written as C escapes
 * (\n, \x1b, \u202e, \\); width is the columns that takes (one per character). */
int tool_escaped_width(const char *text);
void tool_print_escaped(FILE *out, const char *text, int width);
/* The escaped text (as tool_print_escaped writes it) into out, NUL-terminated, at most `columns`
 * columns: text wider than that keeps its start and ends in "..."; an escape is never cut. Returns
 * the columns written. */
int tool_escape_into(const char *text, int columns, char *out, size_t size);

/* Escaped text cut into lines of at most `width` columns, for a table's cell: a line breaks after
 * the last ", " or " " that fits (a list of names stays readable), else at the width; an escape is
 * never cut. The lines are NUL-terminated, one after another in `text`. */
typedef struct tool_lines {
    char *text;
    int count;
    int *starts; /* each line's offset in text */
} tool_lines;
bool tool_lines_wrap(const char *raw, int width, tool_lines *out);
const char *tool_lines_get(const tool_lines *lines, int i); /* "" past the last line */
void tool_lines_free(tool_lines *lines);

#endif
