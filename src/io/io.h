/* SPDX-License-Identifier: BSD-2-Clause */
/* The one way cblob reads and writes files (DESIGN.md, "One way to write a file"). Every reader
 * and writer of the library goes through here, so the rules below hold for all of them.
 *
 * Reading (cb_input_open): the path's type is checked before anything opens it, so a FIFO, a
 * device, a socket or a folder fails at once instead of blocking; the file opened must be the
 * regular file that was checked; it is read with pread into private memory (never mapped: a
 * file truncated by another process would kill a mapping reader with SIGBUS), and a file whose
 * size, modification time, change time or inode differs after the read than before, or that got
 * shorter or longer while being read, fails with CBLOB_ERR_IO. So a load sees one consistent
 * snapshot or fails. (A rewrite of the same size within one tick of the file system's clock,
 * a few milliseconds, leaves no trace that a reader can see.)
 *
 * Writing a named path (cb_output_open):
 * - symbolic links are followed, however many and however written (relative, absolute,
 *   dangling), to the final target;
 * - a regular target with one link, or no target, is replaced atomically: the bytes go to a
 *   temporary file in the target's folder, which is fsync'ed and renamed over the target only
 *   once complete, so the name always holds the whole old or the whole new file, across crashes
 *   and power loss too. The replaced file's mode is kept, and its owner and group where the
 *   writer may set them (where it may not, the new file is never more permissive: setuid and
 *   setgid are dropped, and a group that could not be kept gets the others' permissions);
 *   extended attributes and ACLs are not carried over. A new file gets 0666 less the umask. A
 *   target the writer may not write (mode 0444 for a user) is refused;
 * - a regular target with other hard links keeps them: the bytes are staged whole in a temporary
 *   file first, space for them is reserved in the target, and then they are copied into it, so
 *   every name sees the new content and a failed or full-disk save leaves the target untouched.
 *   This case is not crash-atomic: a crash during the copy leaves the target part old, part new;
 * - a character device or a FIFO is written in place: no temporary, no truncation, no rename
 *   (so /dev/null stays a device). A FIFO that no process reads fails at once, and a reader
 *   that goes away gives EPIPE, never SIGPIPE. A link of /proc that names no path but a pipe
 *   ("pipe:[N]": /dev/stdout when standard output is a pipe) is opened by the kernel and
 *   written in place the same way. Such a target cannot be gone back over: writers whose format
 *   would rewrite a header write strictly forward into it (cb_output_can_rewrite);
 * - a folder, a socket or a block device is refused with CBLOB_ERR_IO, and so is a name starting
 *   with CB_TEMP_PREFIX (below).
 *
 * Writing inside an output folder (cb_out_dir_open, cb_output_open_in): the folder is opened
 * once (its own path may hold symbolic links) and every file is made relative to it. Its
 * contents are not trusted: a name that is a symbolic link or a regular file is replaced as an
 * entry (the link's target and the file's other hard links are never written through), a new
 * name must still be free when the file is put in place, and a name that is anything else (a
 * FIFO, a folder, a device, a socket) is refused. Files are made fresh (0666 less the umask,
 * owned by the writer) and put in place atomically, but are made durable only by
 * cb_out_dir_sync, once for the whole folder, not one fsync per file.
 *
 * Files of an output folder that must appear together (a .npy folder's) are staged (cb_out_dir_stage):
 * each is made in a staging folder inside the output folder, ".cblob-tmp-<pid>-s<n>", which its
 * writer holds locked, and all are moved into place by cb_out_dir_publish; a writer that stops or
 * fails before then leaves the output folder as it was (cb_out_dir_abandon removes the staging
 * folder, and the output folder too when cb_out_dir_create made it).
 *
 * Temporary files are named ".cblob-tmp-<pid>-<n>" and locked (flock) by their writer for as long
 * as it writes. Every save to a named path, and every output folder when it is opened, first
 * removes the temporaries in that folder that no process holds: those of writers that were
 * killed, staging folders with everything in them. (On a file system without locks none are removed.) Errors (ENOSPC, EDQUOT, EIO, ...) are reported with
 * the system's reason whether write, close, fsync or rename found them; the temporary is then
 * removed and the target untouched. Nothing here installs a signal handler. */
#ifndef CBLOB_SRC_IO_H
#define CBLOB_SRC_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

/* ---- reading ---------------------------------------------------------------------------- */

/* Input bytes: borrowed from the caller, or read from a file into private memory. */
typedef struct cb_input {
    const uint8_t *bytes;
    size_t size;
    void *memory; /* non-NULL when the bytes were read here: an anonymous mapping ... */
    size_t memory_size; /* ... of this many bytes */
} cb_input;

/* Files are read in pieces of this size (cb_io_after_read_hook runs after each). */
#define CB_READ_PIECE ((size_t)4 << 20)

cb_input cb_input_bytes(const uint8_t *bytes, size_t size);
/* Reads a regular file whole, as a consistent snapshot (above). CBLOB_ERR_IO names the path and
 * the reason: missing, not a regular file (saying what it is), unreadable, changed while read. */
cblob_status cb_input_open(const char *path, cb_input *out);
/* Decides from the first bytes of what a descriptor holds (at least CB_STREAM_HEAD bytes, or all
 * of it when `complete`) whether to read on, and how much at most: a reader of streams refuses
 * what is of no kind it reads after reading its head, not after reading a pipe of zeros until
 * memory runs out. */
#define CB_STREAM_HEAD ((size_t)64 << 10)
typedef cblob_status cb_stream_check(void *context, const uint8_t *head, size_t size, bool complete, size_t *limit);

/* Reads what a descriptor the caller owns holds, up to its end (standard input, say): a regular
 * file from its current offset as a snapshot (and the offset moves to its end), anything else
 * (a pipe, a terminal, a socket) until end of file, or until check (may be NULL: no limit) says
 * more is not wanted (CBLOB_ERR_IO naming the limit). A folder is refused. name is for messages. */
cblob_status cb_input_read_fd(int fd, const char *name, cb_stream_check *check, void *context, cb_input *out);
/* Tells that input[offset, offset + length) will not be read again: the whole pages inside it
 * leave the process's memory, and read as zeros afterwards. Loading a model then holds about one
 * copy of it, not two. Does nothing for borrowed bytes. */
void cb_input_done_with(const cb_input *input, size_t offset, size_t length);
void cb_input_close(cb_input *input);

/* A regular file kept open to be read range by range, for as long as its reader lives (a model
 * opened lazily reads each blob's values on first access). Opening checks the path as
 * cb_input_open does and remembers what the file is: device, inode, size, modification and change
 * times. Every read checks them again, before and after the pread, and that the path still names
 * that file (looked up in the folder the path named at open, so the process changing its working
 * folder changes nothing), and fails with CBLOB_ERR_IO ("... changed while it was read") when any
 * differs, or when the file got shorter: a reader never mixes bytes of two versions of a file. The file is never mapped. Reads may run on several threads at
 * once. */
typedef struct cb_input_file cb_input_file;

cblob_status cb_input_file_open(const char *path, cb_input_file **out);
uint64_t cb_input_file_size(const cb_input_file *file);
/* Reads [offset, offset + length) of the file into `to`. */
cblob_status cb_input_file_read(const cb_input_file *file, uint64_t offset, void *to, size_t length);
/* The same without the checks, for a reader that reads many ranges in one go and then checks once
 * (cb_input_file_check) that the file was the one opened all along: a change anywhere in between
 * fails the check, as it fails the checked reads. */
cblob_status cb_input_file_read_unchecked(const cb_input_file *file, uint64_t offset, void *to, size_t length);
cblob_status cb_input_file_check(const cb_input_file *file);
/* Private zero-filled memory of the file's size, into which cb_input_file_read may copy ranges of
 * the file at their own offsets: an image of the parts of the file that were read (the rest reads
 * as zeros and costs no memory). Free it with cb_input_close. */
cblob_status cb_input_file_image(const cb_input_file *file, cb_input *out);
/* Reads the whole file, as cb_input_open reads one: a snapshot into private memory. */
cblob_status cb_input_file_read_all(const cb_input_file *file, cb_input *out);
/* The path's kind without opening it: 1 a folder, 0 anything else (or nothing: opening it will
 * say what is wrong). */
int cb_path_is_folder(const char *path);
void cb_input_file_close(cb_input_file *file);

/* For tests only: when set, runs after each piece a reader reads, with the descriptor and the
 * bytes read so far, so a test can change the file at a chosen moment. */
extern void (*cb_io_after_read_hook)(int fd, size_t done);

/* ---- writing ---------------------------------------------------------------------------- */

/* Temporaries are named CB_TEMP_PREFIX "<pid>-<n>". */
#define CB_TEMP_PREFIX ".cblob-tmp-"

/* One file being written: open it, write bytes any number of times, then commit (the file takes
 * its place) or abort (nothing changes). Both free the handle. After a failed write, later writes
 * do nothing and fail again, and commit fails with the first failure's reason and cleans up, so a
 * producer that cannot check each write (a protobuf-c sink) checks only the commit. */
typedef struct cb_output cb_output;

/* A named output path, by the rules above. Fails at once where the target is refused, its folder
 * cannot be written, or a FIFO has no reader. */
cblob_status cb_output_open(const char *path, cb_output **out);
/* A descriptor the caller owns (standard output, say): written where it is, never closed,
 * truncated or synced. name is for messages. A folder is refused. */
cblob_status cb_output_open_fd(int fd, const char *name, cb_output **out);
cblob_status cb_output_write(cb_output *output, const void *bytes, size_t size);
/* Rewrites bytes already written (a zip entry's local header, once its size and CRC are known):
 * only a file written through a temporary can go back; one written in place (a device, a FIFO)
 * fails with CBLOB_ERR_IO. */
cblob_status cb_output_write_at(cb_output *output, uint64_t offset, const void *bytes, size_t size);
/* Whether cb_output_write_at can go back: false for a target written in place (a device, a FIFO,
 * a caller's descriptor), whose writers must write strictly forward. */
bool cb_output_can_rewrite(const cb_output *output);
cblob_status cb_output_commit(cb_output *output);
void cb_output_abort(cb_output *output);

/* An output folder, by the rules above. */
typedef struct cb_out_dir cb_out_dir;

/* Opens the folder (following links in its path) and removes stale temporaries in it. */
cblob_status cb_out_dir_open(const char *path, cb_out_dir **out);
/* The same, making the folder first when it is missing (0777 less the umask). */
cblob_status cb_out_dir_create(const char *path, cb_out_dir **out);
/* A file of the folder: name is one path component (no '/', not "." or "..", not starting with
 * ".cblob-tmp-"). The file appears under name at commit. */
cblob_status cb_output_open_in(cb_out_dir *dir, const char *name, cb_output **out);
/* The same for a file only its owner may read and write (0600 whatever the umask). */
cblob_status cb_output_open_in_private(cb_out_dir *dir, const char *name, cb_output **out);
/* Removes the entry `name` of the folder (a regular file or a symbolic link, never followed; a
 * missing one is no failure): an index that must not outlive the files it lists. */
cblob_status cb_out_dir_remove(cb_out_dir *dir, const char *name);
/* Makes everything committed in the folder so far durable (syncfs, then the folder itself), and
 * reports the first error the file system kept for it. */
cblob_status cb_out_dir_sync(cb_out_dir *dir);
/* From now on, files opened in the folder are made in its staging folder (above): a committed one
 * waits there, under its name, for cb_out_dir_publish. Their names are checked against the output
 * folder's entries when they are opened, as without staging. */
cblob_status cb_out_dir_stage(cb_out_dir *dir);
/* Moves every staged file into place, durably: `last` (may be NULL) once all the others are. A
 * failure on the way leaves the files not moved yet where they were (removed at close). */
cblob_status cb_out_dir_publish(cb_out_dir *dir, const char *last);
/* Files still open in the folder stay valid: they hold their own descriptor. Staged files not
 * published are removed. */
void cb_out_dir_close(cb_out_dir *dir);
/* cb_out_dir_close after a failure: the folder too, when cb_out_dir_create made it and it is empty. */
void cb_out_dir_abandon(cb_out_dir *dir);

#endif
