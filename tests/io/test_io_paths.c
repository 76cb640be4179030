/* SPDX-License-Identifier: BSD-2-Clause */
/* Every cblob_*_file writer and reader on the paths people hand it: symbolic links, modes and
 * owners, hard links, devices, FIFOs, sockets, folders, read-only and full file systems. Through
 * the public API only (cblob_blob_to_proto_file stands for every writer: they share one). The
 * suite runs once as the user running the tests and once more as `nobody` where that user is
 * root (io_unprivileged); tests that need what the user lacks skip with the reason. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io_support.h"

#define NOBODY 65534

static const char old_content[] = "the old content, which a failed save must leave as it is";

typedef struct fixture {
    char folder[512];
    io_payload payload;
} fixture;

static bool fixture_make(fixture *fx, int64_t count)
{
    return io_temp_folder(fx->folder, sizeof fx->folder) && io_payload_make(&fx->payload, count, 1);
}

static void fixture_free(fixture *fx)
{
    io_remove_tree(fx->folder);
    io_payload_free(&fx->payload);
}

static bool is_link_to(const char *link, const char *text)
{
    char got[1024];
    const ssize_t length = readlink(link, got, sizeof got - 1);
    if (length < 0)
        return false;
    got[length] = '\0';
    return strcmp(got, text) == 0;
}

static mode_t mode_of(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0 ? info.st_mode : 0;
}

/* ---- symbolic links ---------------------------------------------------------------------- */

TEST(an_absolute_symlink_is_written_through)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "target.binaryproto"), *link = io_path(1, fx.folder, "link");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    CHECK(symlink(target, link) == 0);
    CHECK_OK(io_payload_save(&fx.payload, link));
    CHECK_MSG(is_link_to(link, target), "the link was replaced instead of written through");
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    CHECK(io_count_entries(fx.folder) == 2);
    fixture_free(&fx);
}

TEST(a_relative_symlink_is_written_through)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "target.binaryproto"), *sub = io_path(1, fx.folder, "sub");
    const char *link = io_path(2, fx.folder, "sub/link");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    CHECK(mkdir(sub, 0700) == 0);
    CHECK(symlink("../target.binaryproto", link) == 0);
    CHECK_OK(io_payload_save(&fx.payload, link));
    CHECK(is_link_to(link, "../target.binaryproto"));
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    CHECK(io_count_entries(sub) == 1 && io_count_entries(fx.folder) == 2);
    fixture_free(&fx);
}

TEST(a_chain_of_symlinks_is_followed_to_the_end)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "real/target");
    CHECK(mkdir(io_path(1, fx.folder, "real"), 0700) == 0);
    CHECK(io_write_file(target, old_content, sizeof old_content));
    /* first -> second (relative) -> third (absolute) -> real/../real/target (relative, with ..) */
    CHECK(symlink("second", io_path(1, fx.folder, "first")) == 0);
    CHECK(symlink(io_path(2, fx.folder, "third"), io_path(3, fx.folder, "second")) == 0);
    CHECK(symlink("real/../real/target", io_path(4, fx.folder, "third")) == 0);
    CHECK_OK(io_payload_save(&fx.payload, io_path(1, fx.folder, "first")));
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    CHECK(S_ISLNK(mode_of(io_path(1, fx.folder, "first"))) && S_ISLNK(mode_of(io_path(3, fx.folder, "second"))) &&
          S_ISLNK(mode_of(io_path(4, fx.folder, "third"))));
    /* A loop is an error, not a hang. */
    CHECK(symlink("loop_b", io_path(5, fx.folder, "loop_a")) == 0 && symlink("loop_a", io_path(6, fx.folder, "loop_b")) == 0);
    CHECK_ERROR(io_payload_save(&fx.payload, io_path(5, fx.folder, "loop_a")), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("Too many levels of symbolic links"), "message: %s", cblob_last_error_message());
    fixture_free(&fx);
}

TEST(a_dangling_symlink_gets_its_target_created)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *link = io_path(0, fx.folder, "link"), *made = io_path(1, fx.folder, "made.binaryproto");
    CHECK(symlink("made.binaryproto", link) == 0);
    CHECK_OK(io_payload_save(&fx.payload, link));
    CHECK(is_link_to(link, "made.binaryproto"));
    CHECK(S_ISREG(mode_of(made)) && io_file_holds(made, fx.payload.bytes, fx.payload.size));
    /* A link into a folder that does not exist says so. */
    CHECK(symlink("missing/file", io_path(2, fx.folder, "nowhere")) == 0);
    CHECK_ERROR(io_payload_save(&fx.payload, io_path(2, fx.folder, "nowhere")), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("No such file or directory") && io_message_has("missing/file"), "message: %s",
              cblob_last_error_message());
    fixture_free(&fx);
}

/* ---- modes and owners ------------------------------------------------------------------- */

TEST(the_mode_of_a_replaced_file_is_kept)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const mode_t modes[] = {0600, 0640, 0751, 0604};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; ++i) {
        const char *target = io_path(0, fx.folder, "target");
        CHECK(io_write_file(target, old_content, sizeof old_content) && chmod(target, modes[i]) == 0);
        CHECK_OK(io_payload_save(&fx.payload, target));
        CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
        CHECK_MSG((mode_of(target) & 07777) == modes[i], "mode %o became %o", (unsigned)modes[i],
                  (unsigned)(mode_of(target) & 07777));
    }
    fixture_free(&fx);
}

TEST(a_new_file_gets_0666_less_the_umask)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const mode_t masks[] = {022, 027, 077, 0};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; ++i) {
        const mode_t before = umask(masks[i]);
        char name[32];
        snprintf(name, sizeof name, "new%zu", i);
        const cblob_status status = io_payload_save(&fx.payload, io_path(0, fx.folder, name));
        umask(before);
        CHECK_OK(status);
        CHECK_EQ_INT(mode_of(io_path(0, fx.folder, name)) & 07777, 0666 & ~masks[i]);
    }
    fixture_free(&fx);
}

TEST(root_keeps_the_owner_and_group_of_another_users_file)
{
    if (geteuid() != 0)
        SKIP("needs root: only root may give a file to another user");
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "theirs");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    CHECK(chown(target, NOBODY, NOBODY) == 0 && chmod(target, 0640) == 0);
    CHECK_OK(io_payload_save(&fx.payload, target));
    struct stat info;
    CHECK(stat(target, &info) == 0);
    CHECK_MSG(info.st_uid == NOBODY && info.st_gid == NOBODY, "owner %u:%u", (unsigned)info.st_uid,
              (unsigned)info.st_gid);
    CHECK_EQ_INT(info.st_mode & 07777, 0640);
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    fixture_free(&fx);
}

/* Runs fn as nobody in a child; its exit status, or -1. */
static int as_nobody(bool (*fn)(void *), void *argument)
{
    const pid_t child = fork();
    if (child == 0) {
        const bool dropped = setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
                             setresuid(NOBODY, NOBODY, NOBODY) == 0;
        _exit(dropped && fn(argument) ? 0 : 1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

typedef struct save_job {
    const io_payload *payload;
    const char *path;
} save_job;

static bool save_succeeds(void *argument)
{
    const save_job *job = argument;
    const bool ok = io_payload_save(job->payload, job->path) == CBLOB_OK;
    if (!ok)
        fprintf(stderr, "save as nobody: %s\n", cblob_last_error_message());
    return ok;
}

TEST(a_file_whose_owner_cannot_be_kept_is_never_more_permissive)
{
    if (geteuid() != 0)
        SKIP("needs root to make a file of another user that this user may write");
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    /* root:root, setuid, group rwx, others rw: nobody may write it and its folder, but may not
     * give the new file to root. */
    const char *target = io_path(0, fx.folder, "roots");
    CHECK(chown(fx.folder, NOBODY, NOBODY) == 0 && chmod(fx.folder, 0755) == 0);
    CHECK(io_write_file(target, old_content, sizeof old_content) && chmod(target, 04676) == 0);
    save_job job = {&fx.payload, target};
    CHECK_EQ_INT(as_nobody(save_succeeds, &job), 0);
    struct stat info;
    CHECK(stat(target, &info) == 0 && info.st_uid == NOBODY);
    /* No setuid; the new group gets what others had (rw), not the old group's rwx. */
    CHECK_MSG((info.st_mode & 07777) == 0666, "mode %o", (unsigned)(info.st_mode & 07777));
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    fixture_free(&fx);
}

TEST(a_file_the_user_may_not_write_is_refused)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "read_only");
    CHECK(io_write_file(target, old_content, sizeof old_content) && chmod(target, 0444) == 0);
    if (geteuid() == 0) {
        /* Root may write any file, as with cp: it is replaced, keeping its mode. */
        CHECK_OK(io_payload_save(&fx.payload, target));
        CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size) && (mode_of(target) & 07777) == 0444);
    } else {
        CHECK_ERROR(io_payload_save(&fx.payload, target), CBLOB_ERR_IO);
        CHECK_MSG(io_message_has("Permission denied"), "message: %s", cblob_last_error_message());
        CHECK(io_file_holds(target, old_content, sizeof old_content) && io_count_entries(fx.folder) == 1);
    }
    fixture_free(&fx);
}

/* ---- hard links ---------------------------------------------------------------------------- */

TEST(every_hard_link_sees_the_new_content)
{
    fixture fx;
    CHECK(fixture_make(&fx, 5000));
    const char *target = io_path(0, fx.folder, "target"), *alias = io_path(1, fx.folder, "alias");
    CHECK(io_write_file(target, old_content, sizeof old_content) && chmod(target, 0640) == 0);
    CHECK(link(target, alias) == 0);
    struct stat before, after;
    CHECK(stat(target, &before) == 0);
    CHECK_OK(io_payload_save(&fx.payload, target));
    CHECK(stat(target, &after) == 0);
    CHECK_MSG(after.st_ino == before.st_ino && after.st_nlink == 2, "the hard link was broken");
    CHECK(io_file_holds(target, fx.payload.bytes, fx.payload.size));
    CHECK(io_file_holds(alias, fx.payload.bytes, fx.payload.size));
    CHECK((after.st_mode & 07777) == 0640 && io_count_entries(fx.folder) == 2);
    /* A shorter content through the other name: the file shrinks to it. */
    io_payload small;
    CHECK(io_payload_make(&small, 3, 2));
    CHECK_OK(io_payload_save(&small, alias));
    CHECK(io_file_holds(target, small.bytes, small.size));
    io_payload_free(&small);
    fixture_free(&fx);
}

/* ---- devices, FIFOs, sockets, folders --------------------------------------------------- */

TEST(a_character_device_is_written_in_place)
{
    fixture fx;
    CHECK(fixture_make(&fx, 1000));
    char why[256];
    const char *null_twin = io_path(0, fx.folder, "null");
    if (!io_make_device(null_twin, false, 1, 3, why, sizeof why)) {
        fixture_free(&fx);
        SKIP(why);
    }
    CHECK_OK(io_payload_save(&fx.payload, null_twin));
    struct stat info;
    CHECK(lstat(null_twin, &info) == 0);
    CHECK_MSG(S_ISCHR(info.st_mode) && info.st_rdev == makedev(1, 3), "the device node was replaced");
    CHECK(io_count_entries(fx.folder) == 1);
    fixture_free(&fx);
}

TEST(a_full_device_reports_no_space_left)
{
    fixture fx;
    CHECK(fixture_make(&fx, 1000));
    char why[256];
    const char *full_twin = io_path(0, fx.folder, "full");
    if (!io_make_device(full_twin, false, 1, 7, why, sizeof why)) {
        fixture_free(&fx);
        SKIP(why);
    }
    CHECK_ERROR(io_payload_save(&fx.payload, full_twin), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("No space left on device"), "message: %s", cblob_last_error_message());
    struct stat info;
    CHECK(lstat(full_twin, &info) == 0 && S_ISCHR(info.st_mode) && info.st_rdev == makedev(1, 7));
    CHECK(io_count_entries(fx.folder) == 1);
    fixture_free(&fx);
}

TEST(a_fifo_that_nobody_reads_fails_at_once)
{
    alarm(20); /* a hang is a failure */
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *fifo = io_path(0, fx.folder, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_ERROR(io_payload_save(&fx.payload, fifo), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("FIFO") && io_message_has("no process is reading"), "message: %s",
              cblob_last_error_message());
    CHECK(S_ISFIFO(mode_of(fifo)) && io_count_entries(fx.folder) == 1);
    fixture_free(&fx);
}

/* Reads a descriptor to its end. */
static size_t read_all(int fd, uint8_t *buffer, size_t size)
{
    size_t done = 0;
    ssize_t n;
    while (done < size && (n = read(fd, buffer + done, size - done)) > 0)
        done += (size_t)n;
    return done;
}

TEST(a_fifo_with_a_reader_receives_the_bytes)
{
    alarm(20);
    fixture fx;
    CHECK(fixture_make(&fx, 1000)); /* less than a pipe's buffer: the save cannot wait on us */
    const char *fifo = io_path(0, fx.folder, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    const int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    const int keeper = open(fifo, O_WRONLY); /* so the reader sees the end only once we close it */
    CHECK(reader >= 0 && keeper >= 0);
    CHECK_OK(io_payload_save(&fx.payload, fifo));
    close(keeper);
    CHECK(fcntl(reader, F_SETFL, 0) == 0);
    uint8_t *got = malloc(fx.payload.size + 1);
    CHECK(got != NULL);
    CHECK(read_all(reader, got, fx.payload.size + 1) == fx.payload.size);
    CHECK(memcmp(got, fx.payload.bytes, fx.payload.size) == 0);
    free(got);
    close(reader);
    CHECK(S_ISFIFO(mode_of(fifo)));
    fixture_free(&fx);
}

TEST(a_fifo_whose_reader_leaves_gives_epipe_not_sigpipe)
{
    alarm(20);
    fixture fx;
    CHECK(fixture_make(&fx, 1 << 20)); /* 4 MiB: more than the pipe holds */
    const char *fifo = io_path(0, fx.folder, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    int ready[2];
    CHECK(pipe(ready) == 0);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* Reads one byte once bytes come, then goes away. */
        const int reader = open(fifo, O_RDONLY | O_NONBLOCK);
        (void)!write(ready[1], "r", 1);
        struct pollfd wait_for = {.fd = reader, .events = POLLIN};
        char byte;
        _exit(reader >= 0 && poll(&wait_for, 1, 15000) == 1 && read(reader, &byte, 1) == 1 ? 0 : 1);
    }
    char byte;
    CHECK(read(ready[0], &byte, 1) == 1);
    const cblob_status status = io_payload_save(&fx.payload, fifo);
    int child_status = 0;
    CHECK(waitpid(child, &child_status, 0) == child && WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
    CHECK_ERROR(status, CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("Broken pipe"), "message: %s", cblob_last_error_message());
    /* SIGPIPE was neither delivered (we are alive) nor left pending. */
    sigset_t pending;
    CHECK(sigpending(&pending) == 0 && !sigismember(&pending, SIGPIPE));
    CHECK(S_ISFIFO(mode_of(fifo)));
    close(ready[0]), close(ready[1]);
    fixture_free(&fx);
}

/* /dev/stdout when standard output is a pipe leads to /proc/self/fd/1, whose link reads
 * "pipe:[N]": no path, which only the kernel can follow; the pipe is written in place. */
TEST(a_pipe_named_by_its_proc_link_is_written_in_place)
{
    alarm(20);
    fixture fx;
    CHECK(fixture_make(&fx, 1000)); /* less than a pipe's buffer: the save cannot wait on us */
    int ends[2];
    CHECK(pipe(ends) == 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", ends[1]);
    CHECK_OK(io_payload_save(&fx.payload, path));
    close(ends[1]);
    uint8_t *got = malloc(fx.payload.size + 1);
    CHECK(got != NULL);
    CHECK(read_all(ends[0], got, fx.payload.size + 1) == fx.payload.size);
    CHECK(memcmp(got, fx.payload.bytes, fx.payload.size) == 0);
    free(got);
    close(ends[0]);
    fixture_free(&fx);
}

/* /dev/stdout when standard output is a regular file (`cblob convert ... /dev/stdout >> log`, or
 * `{ echo header; cblob ...; } > file`) leads to /proc/self/fd/1 and from there to the file's
 * path. The file is written through the descriptor, from its offset on, as a program writes its
 * standard output: what was written before stays, the descriptor's offset moves past the bytes,
 * and the file keeps its inode (replacing it would leave the shell's descriptor on a file no name
 * leads to). */
static void check_written_through(const char *name_form, int open_flags)
{
    fixture fx;
    CHECK(fixture_make(&fx, 3000));
    const char *target = io_path(0, fx.folder, "redirected");
    static const char before[] = "what the shell wrote first\n";
    const int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | open_flags, 0600);
    CHECK(fd >= 0 && write(fd, before, sizeof before - 1) == (ssize_t)(sizeof before - 1));
    struct stat was, now;
    CHECK(fstat(fd, &was) == 0);
    char path[64];
    snprintf(path, sizeof path, name_form, fd);
    CHECK_OK(io_payload_save(&fx.payload, path));
    CHECK(stat(target, &now) == 0);
    CHECK_MSG(now.st_ino == was.st_ino, "%s: the file behind the descriptor was replaced", path);
    CHECK(lseek(fd, 0, SEEK_CUR) == (off_t)(sizeof before - 1 + fx.payload.size));
    close(fd);
    uint8_t *want = malloc(sizeof before - 1 + fx.payload.size);
    CHECK(want != NULL);
    memcpy(want, before, sizeof before - 1);
    memcpy(want + sizeof before - 1, fx.payload.bytes, fx.payload.size);
    CHECK_MSG(io_file_holds(target, want, sizeof before - 1 + fx.payload.size),
              "%s: the file does not hold what was written before, then the bytes", path);
    free(want);
    CHECK(io_count_entries(fx.folder) == 1);
    fixture_free(&fx);
}

TEST(a_regular_file_behind_a_descriptor_is_written_through_it)
{
    check_written_through("/proc/self/fd/%d", 0);
    check_written_through("/dev/fd/%d", O_APPEND);
}

TEST(a_descriptor_open_for_reading_only_is_refused)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *target = io_path(0, fx.folder, "read_only");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    const int fd = open(target, O_RDONLY);
    CHECK(fd >= 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CHECK(io_payload_save(&fx.payload, path) == CBLOB_ERR_IO);
    CHECK_MSG(strstr(cblob_last_error_message(), "open for reading only") != NULL, "message: %s",
              cblob_last_error_message());
    close(fd);
    CHECK(io_file_holds(target, old_content, sizeof old_content) && io_count_entries(fx.folder) == 1);
    fixture_free(&fx);
}

/* An .npz cannot go back to a member's local header in a FIFO or a device: written there, the
 * archive streams forward with data descriptors (issue 27), and reads back as the same model. */
typedef struct npz_case {
    cblob_context *context;
    cblob_model *model;
    uint8_t *expected; /* the model's npz through the other writers, in memory */
    size_t expected_size;
} npz_case;

static bool npz_case_make(npz_case *c)
{
    *c = (npz_case){0};
    return cblob_context_create(&c->context) == CBLOB_OK &&
           cblob_model_open_file(c->context, CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel", &c->model) == CBLOB_OK &&
           cblob_model_to_npz(c->model, 0, NULL, 0, &c->expected_size) == CBLOB_OK &&
           (c->expected = malloc(c->expected_size)) != NULL &&
           cblob_model_to_npz(c->model, 0, c->expected, c->expected_size, &c->expected_size) == CBLOB_OK;
}

static void npz_case_free(npz_case *c)
{
    free(c->expected);
    cblob_model_destroy(c->model);
    cblob_context_destroy(c->context);
}

/* Bytes that must open as an npz holding the case's model: the same npz once written again. */
static bool npz_holds_the_model(const npz_case *c, const uint8_t *bytes, size_t size)
{
    cblob_model *back = NULL;
    size_t again_size = 0;
    uint8_t *again = NULL;
    bool same = cblob_model_open_npz(c->context, bytes, size, &back) == CBLOB_OK &&
                cblob_model_to_npz(back, 0, NULL, 0, &again_size) == CBLOB_OK && again_size == c->expected_size &&
                (again = malloc(again_size)) != NULL &&
                cblob_model_to_npz(back, 0, again, again_size, &again_size) == CBLOB_OK &&
                memcmp(again, c->expected, again_size) == 0;
    free(again);
    if (back != NULL)
        cblob_model_destroy(back);
    return same;
}

TEST(an_npz_streams_into_a_fifo_that_a_process_reads)
{
    alarm(30);
    fixture fx;
    CHECK(io_temp_folder(fx.folder, sizeof fx.folder));
    npz_case c;
    CHECK(npz_case_make(&c));
    CHECK(c.expected_size > (size_t)64 << 10); /* more than a pipe holds: the save waits on its reader */
    const char *fifo = io_path(0, fx.folder, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    /* The reader, another process, gets the bytes into shared memory: [0, 8) their count. */
    const size_t room = 2 * c.expected_size + 4096;
    uint8_t *shared = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    const int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    const int keeper = open(fifo, O_WRONLY); /* the reader sees the end once the save and we close */
    CHECK(reader >= 0 && keeper >= 0);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        close(keeper);
        uint64_t done = 0;
        ssize_t n = 0;
        if (fcntl(reader, F_SETFL, 0) != 0)
            _exit(1);
        while (done < room - 8 && (n = read(reader, shared + 8 + done, room - 8 - done)) > 0)
            done += (uint64_t)n;
        memcpy(shared, &done, sizeof done);
        _exit(n == 0 ? 0 : 1);
    }
    close(reader);
    const cblob_status status = cblob_model_to_npz_file(c.model, 0, fifo);
    const char *message = status == CBLOB_OK ? "" : cblob_last_error_message();
    close(keeper);
    int child_status = 0;
    CHECK(waitpid(child, &child_status, 0) == child && WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
    CHECK_MSG(status == CBLOB_OK, "status %d: %s", (int)status, message);
    uint64_t got = 0;
    memcpy(&got, shared, sizeof got);
    /* Every member flagged as followed by its data descriptor (general purpose bit 3). */
    CHECK(got > 30 && (shared[8 + 6] & 8) != 0);
    CHECK(npz_holds_the_model(&c, shared + 8, (size_t)got));
    CHECK(S_ISFIFO(mode_of(fifo)));
    munmap(shared, room);
    npz_case_free(&c);
    io_remove_tree(fx.folder);
}

TEST(an_npz_is_written_to_a_character_device_in_place)
{
    fixture fx;
    CHECK(io_temp_folder(fx.folder, sizeof fx.folder));
    char why[256];
    const char *device = io_path(0, fx.folder, "null");
    if (!io_make_device(device, false, 1, 3, why, sizeof why)) { /* a private /dev/null */
        io_remove_tree(fx.folder);
        SKIP(why);
    }
    npz_case c;
    CHECK(npz_case_make(&c));
    CHECK_OK(cblob_model_to_npz_file(c.model, 0, device));
    CHECK(S_ISCHR(mode_of(device)) && io_count_entries(fx.folder) == 1);
    npz_case_free(&c);
    io_remove_tree(fx.folder);
}

TEST(a_folder_a_socket_and_a_block_device_are_refused)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *folder = io_path(0, fx.folder, "folder"), *socket_path = io_path(1, fx.folder, "socket");
    CHECK(mkdir(folder, 0700) == 0);
    CHECK_ERROR(io_payload_save(&fx.payload, folder), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("is a folder"), "message: %s", cblob_last_error_message());
    CHECK_ERROR(io_payload_save(&fx.payload, io_path(2, fx.folder, "folder/")), CBLOB_ERR_IO);
    CHECK(S_ISDIR(mode_of(folder)) && io_count_entries(folder) == 0);
    const int listening = io_make_socket(socket_path);
    CHECK(listening >= 0);
    CHECK_ERROR(io_payload_save(&fx.payload, socket_path), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("is a socket"), "message: %s", cblob_last_error_message());
    CHECK(S_ISSOCK(mode_of(socket_path)));
    close(listening);
    /* Block devices: a node of the experimental range, never opened. */
    char why[256];
    const char *block = io_path(3, fx.folder, "block");
    if (io_make_device(block, true, 240, 0, why, sizeof why)) {
        CHECK_ERROR(io_payload_save(&fx.payload, block), CBLOB_ERR_IO);
        CHECK_MSG(io_message_has("is a block device"), "message: %s", cblob_last_error_message());
        CHECK(S_ISBLK(mode_of(block)));
    } else {
        printf("block device part skipped: %s\n", why);
    }
    /* Names of cblob's temporaries are not for saving to: the next save would remove them. */
    CHECK_ERROR(io_payload_save(&fx.payload, io_path(4, fx.folder, ".cblob-tmp-1-1")), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("temporary files"), "message: %s", cblob_last_error_message());
    CHECK(io_count_temporaries(fx.folder) == 0);
    fixture_free(&fx);
}

/* ---- read-only and full file systems ------------------------------------------------------ */

TEST(a_read_only_folder_fails_and_leaves_the_file)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *inner = io_path(0, fx.folder, "inner"), *target = io_path(1, fx.folder, "inner/target");
    CHECK(mkdir(inner, 0700) == 0);
    const char *expected_reason = "Permission denied";
    if (geteuid() == 0) {
        /* Root writes any folder: make it a file system mounted read-only. */
        char why[256];
        if (!io_private_tmpfs(inner, "size=1m", why, sizeof why)) {
            fixture_free(&fx);
            SKIP(why);
        }
        CHECK(io_write_file(target, old_content, sizeof old_content));
        CHECK(mount(NULL, inner, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
        expected_reason = "Read-only file system";
    } else {
        CHECK(io_write_file(target, old_content, sizeof old_content));
        CHECK(chmod(inner, 0500) == 0);
    }
    CHECK_ERROR(io_payload_save(&fx.payload, target), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has(expected_reason), "message: %s", cblob_last_error_message());
    CHECK(io_file_holds(target, old_content, sizeof old_content) && io_count_entries(inner) == 1);
    if (geteuid() == 0)
        umount(inner);
    fixture_free(&fx);
}

/* A full file system: a private tmpfs with the existing file in it, and its free bytes. */
static bool full_fs(fixture *fx, const char **out_folder, size_t *out_free)
{
    static char folder[600];
    snprintf(folder, sizeof folder, "%s/fs", fx->folder);
    char why[256];
    if (mkdir(folder, 0700) != 0)
        return false;
    if (!io_private_tmpfs(folder, "size=256k", why, sizeof why)) {
        fixture_free(fx);
        SKIP(why);
    }
    struct statvfs info;
    if (statvfs(folder, &info) != 0)
        return false;
    *out_folder = folder;
    *out_free = (size_t)info.f_bavail * info.f_frsize;
    return true;
}

TEST(a_full_file_system_leaves_the_file_untouched_and_no_temporary)
{
    fixture fx;
    CHECK(fixture_make(&fx, 1 << 18)); /* 1 MiB into 256 KiB */
    const char *fs;
    size_t free_bytes;
    CHECK(full_fs(&fx, &fs, &free_bytes));
    const char *target = io_path(0, fs, "target");
    CHECK(io_write_file(target, old_content, sizeof old_content));
    CHECK_ERROR(io_payload_save(&fx.payload, target), CBLOB_ERR_IO);
    CHECK_MSG(io_message_has("No space left on device"), "message: %s", cblob_last_error_message());
    CHECK(io_file_holds(target, old_content, sizeof old_content));
    CHECK_MSG(io_count_entries(fs) == 1, "%d entries: a temporary was left", io_count_entries(fs));
    /* A new file: nothing at all is left. */
    CHECK_ERROR(io_payload_save(&fx.payload, io_path(1, fs, "new")), CBLOB_ERR_IO);
    CHECK(io_count_entries(fs) == 1);
    umount(fs);
    fixture_free(&fx);
}

TEST(a_full_file_system_leaves_a_hard_linked_file_untouched)
{
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *fs;
    size_t free_bytes;
    CHECK(full_fs(&fx, &fs, &free_bytes));
    const char *target = io_path(0, fs, "target"), *alias = io_path(1, fs, "alias");
    CHECK(io_write_file(target, old_content, sizeof old_content) && link(target, alias) == 0);
    /* Content that cannot even be staged, then content that can be staged but not also copied
     * in (the room for it is reserved before the file is touched). */
    const size_t sizes[] = {2 * free_bytes, free_bytes * 3 / 4};
    for (int i = 0; i < 2; ++i) {
        io_payload big;
        CHECK(io_payload_make(&big, (int64_t)(sizes[i] / 4), 3));
        CHECK_ERROR(io_payload_save(&big, alias), CBLOB_ERR_IO);
        CHECK_MSG(io_message_has("No space left on device"), "message: %s", cblob_last_error_message());
        io_payload_free(&big);
        CHECK_MSG(io_file_holds(target, old_content, sizeof old_content), "case %d touched the file", i);
        CHECK(io_count_entries(fs) == 2);
    }
    umount(fs);
    fixture_free(&fx);
}

/* ---- reading -------------------------------------------------------------------------------- */

/* Every reader of a file, on one path: each must fail with CBLOB_ERR_IO naming what it is. */
static bool every_reader_refuses(const char *path, const char *kind)
{
    cblob_context *context = NULL;
    cblob_blob *blob = NULL, *made = NULL;
    cblob_model *model = NULL;
    cblob_proto_kind proto_kind;
    int64_t count = 0;
    bool refused = cblob_context_create(&context) == CBLOB_OK &&
                   cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &blob) == CBLOB_OK;
    const cblob_status statuses[] = {
        cblob_blob_from_proto_file(blob, path, 1),
        cblob_blob_create_from_proto_file(context, path, &made),
        cblob_blob_vector_from_proto_file(context, path, 0, NULL, &count),
        cblob_model_open_file(context, path, &model),
        cblob_proto_detect_file(path, &proto_kind),
    };
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; ++i)
        refused = refused && statuses[i] == CBLOB_ERR_IO;
    refused = refused && io_message_has(kind) && made == NULL && model == NULL;
    if (!refused)
        fprintf(stderr, "%s: %s\n", path, cblob_last_error_message());
    cblob_blob_destroy(blob);
    cblob_context_destroy(context);
    return refused;
}

TEST(reading_a_fifo_socket_folder_or_device_fails_at_once)
{
    alarm(20); /* opening a FIFO to read it would wait for a writer forever */
    fixture fx;
    CHECK(fixture_make(&fx, 10));
    const char *fifo = io_path(0, fx.folder, "fifo"), *socket_path = io_path(1, fx.folder, "socket");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(every_reader_refuses(fifo, "is a FIFO (named pipe), not a regular file"));
    const int listening = io_make_socket(socket_path);
    CHECK(listening >= 0 && every_reader_refuses(socket_path, "is a socket"));
    close(listening);
    CHECK(every_reader_refuses(fx.folder, "is a folder"));
    char why[256];
    const char *zero_twin = io_path(2, fx.folder, "zero");
    if (io_make_device(zero_twin, false, 1, 5, why, sizeof why))
        CHECK(every_reader_refuses(zero_twin, "is a character device"));
    else
        printf("device part skipped: %s\n", why);
    fixture_free(&fx);
}

/* ---- links in shared folders (issue 27) ------------------------------------------------------ */

static bool save_is_refused(void *argument)
{
    const save_job *job = argument;
    return io_payload_save(job->payload, job->path) == CBLOB_ERR_IO &&
           strstr(cblob_last_error_message(), "protected_symlinks") != NULL;
}

/* The kernel's protected_symlinks rule, which a save that follows links itself must apply: in a
 * sticky folder others may write (as /tmp), a link is followed only when the saver owns it or the
 * folder's owner does. 1.1 followed another user's link: root saving to /tmp/x replaced whatever
 * it named, keeping the victim's mode and owner. */
TEST(links_in_sticky_shared_folders_follow_the_kernels_rule)
{
    if (geteuid() != 0)
        SKIP("needs root: only root may make a link that another user owns");
    fixture fx;
    CHECK(fixture_make(&fx, 100));
    const char *shared = io_path(0, fx.folder, "shared");
    const char *victim = io_path(1, fx.folder, "victim");
    CHECK(mkdir(shared, 0700) == 0 && chmod(shared, 01777) == 0);
    CHECK(io_write_file(victim, old_content, sizeof old_content));
    /* Another user's link: refused to root, and to a third user. */
    const char *theirs = io_path(2, shared, "theirs");
    CHECK(symlink(victim, theirs) == 0 && lchown(theirs, NOBODY, NOBODY) == 0);
    CHECK_STATUS(io_payload_save(&fx.payload, theirs), CBLOB_ERR_IO);
    CHECK(io_message_has("protected_symlinks"));
    CHECK(io_file_holds(victim, old_content, sizeof old_content));
    struct stat info;
    CHECK(lstat(theirs, &info) == 0 && S_ISLNK(info.st_mode));
    /* Followed by its owner (nobody may write the victim for this part). */
    CHECK(chmod(victim, 0666) == 0 && chmod(fx.folder, 0777) == 0);
    save_job job = {&fx.payload, theirs};
    CHECK_EQ_INT(as_nobody(save_succeeds, &job), 0);
    CHECK(io_file_holds(victim, fx.payload.bytes, fx.payload.size));
    /* A third user's link: refused to nobody too. The folder's owner's (root's, as in /tmp) is
     * followed by everyone. */
    CHECK(io_write_file(victim, old_content, sizeof old_content));
    const char *stranger = io_path(3, shared, "stranger");
    CHECK(symlink(victim, stranger) == 0 && lchown(stranger, 54321, 54321) == 0);
    job.path = stranger;
    CHECK_EQ_INT(as_nobody(save_is_refused, &job), 0);
    CHECK_STATUS(io_payload_save(&fx.payload, stranger), CBLOB_ERR_IO);
    CHECK(io_file_holds(victim, old_content, sizeof old_content));
    const char *owners = io_path(5, shared, "owners");
    CHECK(symlink(victim, owners) == 0);
    job.path = owners;
    CHECK_EQ_INT(as_nobody(save_succeeds, &job), 0);
    CHECK(io_file_holds(victim, fx.payload.bytes, fx.payload.size));
    /* Outside a sticky shared folder every link is followed, as the kernel follows it. */
    const char *private_link = io_path(4, fx.folder, "private-link");
    CHECK(symlink(victim, private_link) == 0 && lchown(private_link, NOBODY, NOBODY) == 0);
    CHECK(io_write_file(victim, old_content, sizeof old_content));
    CHECK_OK(io_payload_save(&fx.payload, private_link));
    CHECK(io_file_holds(victim, fx.payload.bytes, fx.payload.size));
    fixture_free(&fx);
}
