/* SPDX-License-Identifier: BSD-2-Clause */
#include "progress.h"

#include <stddef.h>
#include <stdio.h>

#include "status.h"

/* The calling thread's innermost scope (a callback that calls cblob again nests one). */
static _Thread_local cb_progress *current;

void cb_progress_begin(cb_progress *progress, cb_progress_kind kind, cblob_progress_fn fn, void *user_data)
{
    /* A scope without a callback still hides the outer one: its call's work is not the outer's. */
    *progress = (cb_progress){.fn = fn, .user_data = user_data, .kind = kind, .total = -1, .outer = current};
    current = progress;
}

cblob_status cb_progress_end(cb_progress *progress, cblob_status status)
{
    current = progress->outer;
    return status;
}

cb_progress *cb_progress_current(cb_progress_kind kind)
{
    cb_progress *progress = current;
    return progress != NULL && progress->fn != NULL && progress->kind == kind ? progress : NULL;
}

static cblob_status stopped(const cb_progress *progress)
{
    char total[48] = "";
    if (progress->total >= 0)
        snprintf(total, sizeof total, " of %lld", (long long)progress->total);
    return cb_fail(CBLOB_ERR_CANCELLED, "stopped by the progress callback after %lld%s bytes %s; nothing was %s",
                   (long long)progress->done, total, progress->kind == CB_PROGRESS_READING ? "read" : "written",
                   progress->kind == CB_PROGRESS_READING ? "opened" : "changed");
}

cblob_status cb_progress_report(cb_progress *progress)
{
    if (progress->stopped)
        return stopped(progress);
    if (progress->total >= 0 && progress->done > progress->total)
        progress->total = progress->done;
    progress->started = true;
    progress->next = progress->done + CB_PROGRESS_STEP;
    if (progress->fn(progress->user_data, progress->done, progress->total) == 0)
        return CBLOB_OK;
    progress->stopped = true;
    return stopped(progress);
}

cblob_status cb_progress_size(cb_progress *progress, int64_t total)
{
    if (progress == NULL || progress->fn == NULL)
        return CBLOB_OK;
    if (progress->total < 0)
        progress->total = total;
    return progress->started ? CBLOB_OK : cb_progress_report(progress);
}

void cb_progress_set_total(cb_progress *progress, int64_t total)
{
    if (progress != NULL)
        progress->total = total;
}

cblob_status cb_progress_finish(cb_progress *progress)
{
    if (progress == NULL || progress->fn == NULL)
        return CBLOB_OK;
    if (progress->finished)
        return progress->stopped ? stopped(progress) : CBLOB_OK;
    progress->finished = true;
    /* The estimates (an .npz's container, a .npy folder's listing) end as what was done. */
    progress->total = progress->done;
    return cb_progress_report(progress);
}

cblob_status cb_progress_interrupted(void)
{
    cb_progress *progress = current;
    return progress != NULL && progress->fn != NULL ? cb_progress_report(progress) : CBLOB_OK;
}
