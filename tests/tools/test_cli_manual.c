/* SPDX-License-Identifier: BSD-2-Clause */
/* The program's one text (issue 23): docs/cblob.1.md is rendered into the help, the option tables,
 * the manual page and README.md's section (codegen/manual.py; codegen.fresh keeps them current).
 * Here: every option the help describes is one the program parses (and an undescribed one is
 * refused), the help fits 100 columns, the manual page renders without a warning and names no
 * placeholder, and the sample output the manual (and so the README) shows is what the program
 * prints on the sample model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_support.h"
#include "harness.h"
#include "io_support.h"

static const char *const commands[] = {"inspect", "convert"};

/* The options a command's help lists: "  -o OUT, --output OUT   text" lines, as (name, takes a
 * value) pairs. */
typedef struct listed {
    char name[64];
    bool value;
} listed;

static int options_of_help(const char *help, listed *out, int most)
{
    int count = 0;
    for (const char *line = help; *line != '\0';) {
        const size_t length = strcspn(line, "\n");
        if (strncmp(line, "  -", 3) == 0) {
            /* The label: up to the two spaces before the text, or the whole line. */
            char label[256];
            const char *gap = strstr(line + 2, "  ");
            const size_t size = gap != NULL && gap < line + length ? (size_t)(gap - line - 2) : length - 2;
            snprintf(label, sizeof label, "%.*s", (int)size, line + 2);
            for (char *name = strtok(label, ","); name != NULL && count < most; name = strtok(NULL, ",")) {
                while (*name == ' ')
                    ++name;
                const size_t name_length = strcspn(name, " ");
                snprintf(out[count].name, sizeof out[count].name, "%.*s", (int)name_length, name);
                out[count].value = name[name_length] == ' ';
                ++count;
            }
        }
        line += length + (line[length] == '\n');
    }
    return count;
}

TEST(every_option_the_help_describes_is_parsed_and_no_other)
{
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; ++c) {
        cli_result help;
        CHECK(CLI(&help, commands[c], "--help"));
        CHECK(help.status == 0);
        listed options[64];
        const int count = options_of_help(help.out, options, 64);
        CHECK_MSG(count >= (c == 0 ? 6 : 12), "cblob %s --help lists %d options", commands[c], count);
        for (int i = 0; i < count; ++i) {
            if (strcmp(options[i].name, "-h") == 0 || strcmp(options[i].name, "--help") == 0)
                continue;
            /* The option (with a value when it takes one) and nothing else: whatever the program then
             * says is missing, it is not that the option is unknown. */
            cli_result r;
            CHECK(options[i].value ? CLI(&r, commands[c], options[i].name, "x") : CLI(&r, commands[c], options[i].name));
            CHECK_MSG(strstr(r.err, "unknown option") == NULL && strstr(r.err, "takes no value") == NULL &&
                          strstr(r.err, "value is missing") == NULL,
                      "cblob %s %s: %s", commands[c], options[i].name, r.err);
            cli_result_free(&r);
        }
        cli_result r;
        CHECK(CLI(&r, commands[c], "--frobnicate", "x"));
        CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--frobnicate", "unknown option"));
        cli_result_free(&r);
        cli_result_free(&help);
    }
}

TEST(the_help_fits_100_columns)
{
    const char *const forms[][2] = {{"help", NULL}, {"info", "--help"}, {"inspect", "--help"}, {"convert", "--help"}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; ++f) {
        cli_result r;
        CHECK(forms[f][1] != NULL ? CLI(&r, forms[f][0], forms[f][1]) : CLI(&r, forms[f][0]));
        CHECK(r.status == 0 && r.out_size > 0);
        for (const char *line = r.out; *line != '\0';) {
            const size_t length = strcspn(line, "\n");
            CHECK_MSG(length <= 100, "cblob %s: a line of %zu columns: %.*s", forms[f][0], length, (int)length, line);
            line += length + (line[length] == '\n');
        }
        cli_result_free(&r);
    }
}

TEST(the_manual_page_renders_without_a_warning)
{
    const char *page = CBLOB_BINARY_DIR "/tools/cblob.1";
    if (access("/usr/bin/groff", X_OK) != 0)
        SKIP("groff is not installed (scripts/setup.sh installs groff-base), so the page cannot be rendered");
    char command[1024];
    snprintf(command, sizeof command, "/usr/bin/groff -man -Tutf8 -ww -z '%s' 2>&1", page);
    FILE *pipe = popen(command, "r");
    CHECK(pipe != NULL);
    char warnings[4096] = "";
    const size_t n = fread(warnings, 1, sizeof warnings - 1, pipe);
    warnings[n] = '\0';
    CHECK(pclose(pipe) == 0);
    CHECK_MSG(n == 0, "groff: %s", warnings);
    /* CMake filled in every placeholder: SEE ALSO names the configured include folder. */
    FILE *in = fopen(page, "r");
    CHECK(in != NULL);
    char text[65536];
    const size_t size = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[size] = '\0';
    CHECK_MSG(strstr(text, "@CBLOB_") == NULL, "a placeholder is left in %s", page);
    CHECK(strstr(text, "/include/cblob/cblob.h") != NULL);
}

TEST(the_sample_output_the_manual_shows_is_what_the_program_prints)
{
    /* docs/cblob.1.md's EXAMPLES end with the output of `cblob inspect samples/tiny_lenet.caffemodel`
     * (README.md shows it too): run it from the source folder, as the manual does. */
    FILE *in = fopen(CBLOB_SOURCE_DIR "/docs/cblob.1.md", "r");
    CHECK(in != NULL);
    static char manual[1 << 20];
    const size_t size = fread(manual, 1, sizeof manual - 1, in);
    fclose(in);
    manual[size] = '\0';
    const char *block = strstr(manual, "```text\n");
    CHECK(block != NULL);
    block += strlen("```text\n");
    const char *end = strstr(block, "```\n");
    CHECK(end != NULL);
    CHECK(chdir(CBLOB_SOURCE_DIR) == 0);
    cli_result r;
    CHECK(CLI(&r, "inspect", "samples/tiny_lenet.caffemodel"));
    CHECK(r.status == 0);
    CHECK_MSG(r.out_size == (size_t)(end - block) && memcmp(r.out, block, r.out_size) == 0,
              "the manual's sample output is not what the program prints; put this in docs/cblob.1.md:\n%s", r.out);
    /* The first table a newcomer sees shows how data flows. */
    CHECK(strstr(r.out, "data -> conv1") != NULL && strstr(r.out, "ip1 -> ip1") != NULL);
    cli_result_free(&r);
}
