/* SPDX-License-Identifier: BSD-2-Clause */
/* src/io's own API: the reader's snapshot against files changed while they are read (through a
 * hook between pieces, so the race is deterministic), descriptors, the output folder, temporaries
 * of killed writers, and aborted outputs. Runs as the user and as `nobody` (io_unprivileged). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io.h"
#include "io_support.h"

static const char old_content[] = "the old content, which a failed save must leave as it is";

static mode_t mode_of(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0 ? info.st_mode : 0;
}

/* Bytes that differ at every position of a piece, so a wrong offset shows. */
static uint8_t *pattern(size_t size)
{
    uint8_t *bytes = malloc(size);
    for (size_t i = 0; bytes != NULL && i < size; ++i)
        bytes[i] = (uint8_t)(i * 131 + i / 4093);
    return bytes;
}

/* ---- reading -------------------------------------------------------------------------------- */

TEST(input_is_a_private_copy_that_outlives_truncation)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *path = io_path(0, folder, "input");
    const size_t size = 3 * 65536;
    uint8_t *bytes = pattern(size);
    CHECK(bytes != NULL && io_write_file(path, bytes, size));
    cb_input input;
    CHECK_OK(cb_input_open(path, &input));
    /* Another process truncates the file: a mapped reader would die of SIGBUS here. */
    CHECK(truncate(path, 0) == 0);
    CHECK(input.size == size && memcmp(input.bytes, bytes, size) == 0);
    /* Released whole pages read as zeros; the partial pages at both ends are kept. */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), offset = 100, length = 2 * 65536;
    const size_t first = (offset + page - 1) / page * page, end = (offset + length) / page * page;
    cb_input_done_with(&input, offset, length);
    CHECK(memcmp(input.bytes, bytes, first) == 0 && memcmp(input.bytes + end, bytes + end, size - end) == 0);
    CHECK(input.bytes[first] == 0 && input.bytes[end - 1] == 0);
    cb_input_close(&input);
    /* An empty file is an empty input, not a failure. */
    CHECK_OK(cb_input_open(path, &input));
    CHECK(input.size == 0 && input.bytes != NULL);
    cb_input_close(&input);
    free(bytes);
    io_remove_tree(folder);
}

/* What the hook does to the file being read, once, after the first piece. */
static enum { TRUNCATE, REWRITE, GROW } race_action;
static const char *race_path;
static bool race_done;

static void race(int fd, size_t done)
{
    (void)fd, (void)done;
    if (race_done)
        return;
    race_done = true;
    const int other = open(race_path, O_WRONLY); /* another process's descriptor */
    static const uint8_t changed[16] = "CHANGED CHANGED";
    if (race_action == TRUNCATE)
        (void)!ftruncate(other, 1000);
    else if (race_action == REWRITE)
        (void)!pwrite(other, changed, sizeof changed, 0); /* same size, new bytes where already read */
    else
        (void)!pwrite(other, changed, sizeof changed, lseek(other, 0, SEEK_END));
    close(other);
}

static cblob_status read_racing(const char *path, int action)
{
    race_action = action;
    race_path = path;
    race_done = false;
    cb_io_after_read_hook = race;
    cb_input input = {0};
    const cblob_status status = cb_input_open(path, &input);
    cb_io_after_read_hook = NULL;
    if (status == CBLOB_OK)
        cb_input_close(&input);
    return status;
}

TEST(a_file_changed_while_it_is_read_fails_clearly)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *path = io_path(0, folder, "input");
    /* Three pieces, sparse: cheap to make. */
    const int fd = open(path, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)(3 * CB_READ_PIECE)) == 0 && pwrite(fd, "x", 1, 0) == 1 && close(fd) == 0);
    CHECK_ERROR(read_racing(path, TRUNCATE), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("got shorter while it was read"), "message: %s", cblob_last_error_message());

    CHECK(truncate(path, (off_t)(3 * CB_READ_PIECE)) == 0);
    CHECK_ERROR(read_racing(path, GROW), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("grew while it was read"), "message: %s", cblob_last_error_message());

    /* A rewrite of the same size shows in the modification time: the file's is set in the past
     * first, so that the rewrite cannot fall in the same clock tick. */
    CHECK(truncate(path, (off_t)(3 * CB_READ_PIECE)) == 0);
    CHECK(utimensat(AT_FDCWD, path, (const struct timespec[]){{1000000000, 0}, {1000000000, 0}}, 0) == 0);
    CHECK_ERROR(read_racing(path, REWRITE), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("changed while it was read"), "message: %s", cblob_last_error_message());

    /* Unchanged, the same file reads. */
    cb_input input;
    CHECK_OK(cb_input_open(path, &input));
    CHECK(input.size == 3 * CB_READ_PIECE && input.bytes[0] == 'C');
    cb_input_close(&input);
    io_remove_tree(folder);
}

TEST(a_model_truncated_while_it_loads_fails_clearly)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    io_payload payload;
    CHECK(io_payload_make(&payload, 1000, 1));
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(payload.context, CBLOB_NET_FORMAT_V2, "net", &model));
    CHECK_OK(cblob_model_add_layer(model, "conv1", "Convolution", &payload.blob, 1));
    const char *path = io_path(0, folder, "net.caffemodel");
    CHECK_OK(cblob_model_to_proto_file(model, 0, path));
    cblob_model_destroy(model);
    /* The one piece is read, then the file shrinks before the check. */
    race_action = TRUNCATE, race_path = path, race_done = false;
    cb_io_after_read_hook = race;
    model = NULL;
    const cblob_status status = cblob_model_open_file(payload.context, path, &model);
    cb_io_after_read_hook = NULL;
    CHECK_ERROR(status, CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("cblob_model_open_file") && io_message_has("changed while it was read"), "message: %s",
              cblob_last_error_message());
    CHECK(model == NULL);
    io_payload_free(&payload);
    io_remove_tree(folder);
}

TEST(a_descriptor_is_read_to_its_end)
{
    alarm(20);
    /* A pipe, longer than the first buffer, so the buffer grows. */
    const size_t size = 3 << 20;
    uint8_t *bytes = pattern(size);
    CHECK(bytes != NULL);
    int ends[2];
    CHECK(pipe(ends) == 0);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        close(ends[0]);
        size_t done = 0;
        ssize_t n;
        while (done < size && (n = write(ends[1], bytes + done, size - done)) > 0)
            done += (size_t)n;
        _exit(done == size ? 0 : 1);
    }
    close(ends[1]);
    cb_input input;
    CHECK_OK(cb_input_read_fd(ends[0], "standard input", NULL, NULL, &input));
    close(ends[0]);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(input.size == size && memcmp(input.bytes, bytes, size) == 0);
    cb_input_close(&input);
    /* A regular file, from where its offset stands, which then moves to its end. */
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *path = io_path(0, folder, "file");
    CHECK(io_write_file(path, bytes, 1000));
    const int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && lseek(fd, 10, SEEK_SET) == 10);
    CHECK_OK(cb_input_read_fd(fd, "standard input", NULL, NULL, &input));
    CHECK(input.size == 990 && memcmp(input.bytes, bytes + 10, 990) == 0 && lseek(fd, 0, SEEK_CUR) == 1000);
    cb_input_close(&input);
    close(fd);
    /* A folder is not read. */
    const int folder_fd = open(folder, O_RDONLY | O_DIRECTORY);
    CHECK_ERROR(cb_input_read_fd(folder_fd, "standard input", NULL, NULL, &input), CBLOB_ERR_IO);
    CHECK(io_message_has("standard input is a folder"));
    close(folder_fd);
    free(bytes);
    io_remove_tree(folder);
}

/* ---- a caller's descriptor ----------------------------------------------------------------- */

TEST(a_callers_descriptor_is_written_in_place_and_left_open)
{
    alarm(20);
    int ends[2];
    CHECK(pipe(ends) == 0);
    cb_output *output = NULL;
    CHECK_OK(cb_output_open_fd(ends[1], "standard output", &output));
    CHECK_OK(cb_output_write(output, "hello, ", 7));
    CHECK_OK(cb_output_write(output, "pipe", 4));
    CHECK_OK(cb_output_commit(output));
    char got[16] = {0};
    CHECK(read(ends[0], got, sizeof got) == 11 && memcmp(got, "hello, pipe", 11) == 0);
    CHECK_MSG(fcntl(ends[1], F_GETFD) != -1, "the caller's descriptor was closed");
    /* The reader is gone: EPIPE, and no SIGPIPE. */
    close(ends[0]);
    CHECK_OK(cb_output_open_fd(ends[1], "standard output", &output));
    CHECK_OK(cb_output_write(output, "lost", 4)); /* gathered, not yet written */
    CHECK_ERROR(cb_output_commit(output), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("standard output: cannot write: Broken pipe"), "message: %s", cblob_last_error_message());
    close(ends[1]);
    /* A folder is refused. */
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const int folder_fd = open(folder, O_RDONLY | O_DIRECTORY);
    CHECK_ERROR(cb_output_open_fd(folder_fd, "standard output", &output), CBLOB_ERR_IO);
    close(folder_fd);
    io_remove_tree(folder);
}

/* ---- temporaries ------------------------------------------------------------------------------ */

TEST(an_aborted_or_failed_output_leaves_nothing)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *target = io_path(0, folder, "target"), *alias = io_path(1, folder, "alias");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    cb_output *output = NULL;
    CHECK_OK(cb_output_open(target, &output));
    CHECK(io_count_temporaries(folder) == 1);
    CHECK_OK(cb_output_write(output, "new", 3));
    cb_output_abort(output);
    CHECK(io_file_holds(target, old_content, sizeof old_content) && io_count_entries(folder) == 1);
    /* The same with other hard links (the bytes are staged first). */
    CHECK(link(target, alias) == 0);
    CHECK_OK(cb_output_open(alias, &output));
    CHECK_OK(cb_output_write(output, "new", 3));
    cb_output_abort(output);
    CHECK(io_file_holds(target, old_content, sizeof old_content) && io_count_entries(folder) == 2);
    cb_output_abort(NULL);
    io_remove_tree(folder);
}

TEST(a_killed_writer_leaves_the_original_and_the_next_save_removes_its_temporary)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *target = io_path(0, folder, "target"), *other = io_path(1, folder, "other");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    const size_t size = 1 << 20;
    uint8_t *bytes = pattern(size);
    CHECK(bytes != NULL);
    /* A writer that stays alive meanwhile: its temporary is not stale. */
    cb_output *live = NULL;
    CHECK_OK(cb_output_open(other, &live));
    CHECK_OK(cb_output_write(live, bytes, size));
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        cb_output *output = NULL;
        if (cb_output_open(target, &output) == CBLOB_OK)
            cb_output_write(output, bytes, size);
        kill(getpid(), SIGKILL); /* mid-save */
        _exit(1);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(io_file_holds(target, old_content, sizeof old_content));
    CHECK_MSG(io_count_temporaries(folder) == 2, "%d temporaries", io_count_temporaries(folder));
    /* The next save into the folder removes the killed writer's temporary, not the live one's. */
    io_payload payload;
    CHECK(io_payload_make(&payload, 100, 1));
    CHECK_OK(io_payload_save(&payload, target));
    CHECK(io_file_holds(target, payload.bytes, payload.size));
    CHECK_MSG(io_count_temporaries(folder) == 1, "%d temporaries", io_count_temporaries(folder));
    CHECK_OK(cb_output_commit(live));
    CHECK(io_file_holds(other, bytes, size) && io_count_entries(folder) == 2);
    io_payload_free(&payload);
    free(bytes);
    io_remove_tree(folder);
}

/* ---- output folders ---------------------------------------------------------------------------- */

typedef struct export_fixture {
    char root[512];
    const char *outside; /* a file outside the output folder, which nothing may write */
    const char *folder;  /* the output folder */
    cb_out_dir *dir;
} export_fixture;

static bool export_make(export_fixture *fx)
{
    if (!io_temp_folder(fx->root, sizeof fx->root))
        return false;
    static char outside[600], folder[600];
    snprintf(outside, sizeof outside, "%s/victim", fx->root);
    snprintf(folder, sizeof folder, "%s/export", fx->root);
    fx->outside = outside;
    fx->folder = folder;
    return io_write_file(outside, old_content, sizeof old_content) && mkdir(folder, 0700) == 0;
}

static cblob_status write_in(cb_out_dir *dir, const char *name, const char *text)
{
    cb_output *output = NULL;
    const cblob_status status = cb_output_open_in(dir, name, &output);
    if (status != CBLOB_OK)
        return status;
    cb_output_write(output, text, strlen(text));
    return cb_output_commit(output);
}

static void export_free(export_fixture *fx)
{
    cb_out_dir_close(fx->dir);
    io_remove_tree(fx->root);
}

TEST(an_output_folder_replaces_planted_links_instead_of_following_them)
{
    export_fixture fx;
    CHECK(export_make(&fx));
    CHECK(symlink(fx.outside, io_path(0, fx.folder, "absolute.npy")) == 0);
    CHECK(symlink("../victim", io_path(1, fx.folder, "relative.npy")) == 0);
    CHECK(link(fx.outside, io_path(2, fx.folder, "hard.npy")) == 0);
    CHECK_OK(cb_out_dir_open(fx.folder, &fx.dir));
    const char *names[] = {"absolute.npy", "relative.npy", "hard.npy", "new.npy"};
    for (int i = 0; i < 4; ++i) {
        CHECK_OK(write_in(fx.dir, names[i], names[i]));
        const char *path = io_path(3, fx.folder, names[i]);
        CHECK_MSG(S_ISREG(mode_of(path)) && io_file_holds(path, names[i], strlen(names[i])), "%s", names[i]);
    }
    CHECK_MSG(io_file_holds(fx.outside, old_content, sizeof old_content), "a file outside the folder was written");
    struct stat outside;
    CHECK(stat(fx.outside, &outside) == 0 && outside.st_nlink == 1);
    CHECK(io_count_entries(fx.folder) == 4);
    CHECK_OK(cb_out_dir_sync(fx.dir));
    export_free(&fx);
}

TEST(an_output_folder_refuses_a_planted_fifo_folder_or_socket)
{
    alarm(20);
    export_fixture fx;
    CHECK(export_make(&fx));
    CHECK(mkfifo(io_path(0, fx.folder, "fifo.npy"), 0600) == 0);
    CHECK(mkdir(io_path(0, fx.folder, "folder.npy"), 0700) == 0);
    const int listening = io_make_socket(io_path(0, fx.folder, "socket.npy"));
    CHECK(listening >= 0);
    CHECK_OK(cb_out_dir_open(fx.folder, &fx.dir));
    const char *names[] = {"fifo.npy", "folder.npy", "socket.npy"};
    const char *kinds[] = {"is a FIFO", "is a folder", "is a socket"};
    for (int i = 0; i < 3; ++i) {
        CHECK_ERROR(write_in(fx.dir, names[i], "x"), CBLOB_ERR_IO);
        CHECK_MSG(io_message_has(kinds[i]) && io_message_has("replaces only regular files and symbolic links"),
                  "message: %s", cblob_last_error_message());
    }
    CHECK(S_ISFIFO(mode_of(io_path(0, fx.folder, "fifo.npy"))) && S_ISDIR(mode_of(io_path(1, fx.folder, "folder.npy"))) &&
          S_ISSOCK(mode_of(io_path(2, fx.folder, "socket.npy"))));
    CHECK(io_count_entries(fx.folder) == 3);
    close(listening);
    export_free(&fx);
}

TEST(an_output_folder_gives_a_new_name_only_while_it_is_free)
{
    export_fixture fx;
    CHECK(export_make(&fx));
    CHECK_OK(cb_out_dir_open(fx.folder, &fx.dir));
    cb_output *output = NULL;
    CHECK_OK(cb_output_open_in(fx.dir, "layer.npy", &output));
    CHECK_OK(cb_output_write(output, "new", 3));
    /* Planted while the file is written. */
    const char *planted = io_path(0, fx.folder, "layer.npy");
    CHECK(symlink(fx.outside, planted) == 0);
    CHECK_ERROR(cb_output_commit(output), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("the name was taken while it was written"), "message: %s", cblob_last_error_message());
    CHECK(S_ISLNK(mode_of(planted)) && io_file_holds(fx.outside, old_content, sizeof old_content));
    CHECK(io_count_entries(fx.folder) == 1);
    export_free(&fx);
}

TEST(an_output_folder_makes_fresh_files)
{
    export_fixture fx;
    CHECK(export_make(&fx));
    /* A planted file open to all: the export does not inherit its mode (nor, for root, its owner). */
    const char *planted = io_path(0, fx.folder, "layer.npy");
    CHECK(io_write_file(planted, old_content, sizeof old_content) && chmod(planted, 0666) == 0);
    if (geteuid() == 0)
        CHECK(chown(planted, 65534, 65534) == 0);
    CHECK_OK(cb_out_dir_open(fx.folder, &fx.dir));
    const mode_t mask = umask(022);
    const cblob_status status = write_in(fx.dir, "layer.npy", "new");
    umask(mask);
    CHECK_OK(status);
    struct stat info;
    CHECK(lstat(planted, &info) == 0);
    CHECK_MSG((info.st_mode & 07777) == 0644 && info.st_uid == geteuid(), "mode %o, owner %u",
              (unsigned)(info.st_mode & 07777), (unsigned)info.st_uid);
    export_free(&fx);
}

TEST(an_output_folder_takes_one_name_per_file)
{
    export_fixture fx;
    CHECK(export_make(&fx));
    /* The folder's own path may be a link. */
    const char *link = io_path(0, fx.root, "link_to_export");
    CHECK(symlink("export", link) == 0);
    CHECK_OK(cb_out_dir_open(link, &fx.dir));
    const char *bad[] = {"", ".", "..", "a/b", "/etc/passwd", CB_TEMP_PREFIX "1-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        CHECK_ERROR(write_in(fx.dir, bad[i], "x"), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(write_in(fx.dir, "fine.npy", "ok"));
    CHECK(io_file_holds(io_path(1, fx.folder, "fine.npy"), "ok", 2) && io_count_entries(fx.folder) == 1);
    /* A path that is not a folder. */
    cb_out_dir *not_a_folder = NULL;
    CHECK_ERROR(cb_out_dir_open(fx.outside, &not_a_folder), CBLOB_ERR_IO);
    CHECK(io_message_has("Not a directory") && not_a_folder == NULL);
    export_free(&fx);
}

TEST(an_output_folder_removes_stale_temporaries_once_when_opened)
{
    export_fixture fx;
    CHECK(export_make(&fx));
    const char *stale = io_path(0, fx.folder, CB_TEMP_PREFIX "999999-0");
    const char *held = io_path(1, fx.folder, CB_TEMP_PREFIX "999999-1");
    const char *other = io_path(2, fx.folder, ".cblob-notes");
    CHECK(io_write_file(stale, "x", 1) && io_write_file(held, "x", 1) && io_write_file(other, "x", 1));
    /* A temporary carries cblob's mark where the file system keeps marks (a killed writer's does). */
    const bool marks = setxattr(stale, "user.cblob.temporary", "1", 1, 0) == 0;
    CHECK(marks || errno == ENOTSUP);
    CHECK(!marks || setxattr(held, "user.cblob.temporary", "1", 1, 0) == 0);
    /* Something planted under a temporary's name that is not a file is left alone. */
    CHECK(mkfifo(io_path(3, fx.folder, CB_TEMP_PREFIX "fifo"), 0600) == 0);
    /* And so is a file of a temporary's name that cblob did not make: no mark where marks are
     * kept, or a name of another form. */
    const char *unmarked = io_path(4, fx.folder, CB_TEMP_PREFIX "999999-2");
    const char *odd = io_path(5, fx.folder, CB_TEMP_PREFIX "notes");
    CHECK(io_write_file(unmarked, "x", 1) && io_write_file(odd, "x", 1));
    const int holder = open(held, O_RDONLY);
    CHECK(holder >= 0 && flock(holder, LOCK_EX) == 0);
    CHECK_OK(cb_out_dir_open(fx.folder, &fx.dir));
    CHECK(access(stale, F_OK) != 0 && access(held, F_OK) == 0 && access(other, F_OK) == 0);
    CHECK(access(odd, F_OK) == 0 && (access(unmarked, F_OK) == 0) == marks);
    CHECK(io_count_entries(fx.folder) == 4 + marks);
    close(holder);
    export_free(&fx);
}
