/* SPDX-License-Identifier: BSD-2-Clause */
/* A lane (threads.h): one background thread running the jobs one producer hands it, one at a
 * time, in order. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "threads.h"
#include "alloc.h"

struct cb_lane {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    cb_lane_job run;
    void *arg;
    void *job; /* NULL: idle */
    size_t job_size;
    bool failed, stop;
};

static void *lane_main(void *argument)
{
    cb_lane *lane = argument;
    pthread_mutex_lock(&lane->lock);
    for (;;) {
        while (lane->job == NULL && !lane->stop)
            pthread_cond_wait(&lane->changed, &lane->lock);
        if (lane->job == NULL)
            break;
        void *job = lane->job;
        const size_t size = lane->job_size;
        pthread_mutex_unlock(&lane->lock);
        const bool ok = lane->run(lane->arg, job, size);
        pthread_mutex_lock(&lane->lock);
        lane->failed = lane->failed || !ok;
        lane->job = NULL;
        pthread_cond_broadcast(&lane->changed);
    }
    pthread_mutex_unlock(&lane->lock);
    return NULL;
}

cb_lane *cb_lane_start(cb_lane_job run, void *arg)
{
    cb_lane *lane = cb_calloc(1, sizeof *lane);
    if (lane == NULL)
        return NULL;
    if (pthread_mutex_init(&lane->lock, NULL) != 0) {
        free(lane);
        return NULL;
    }
    if (pthread_cond_init(&lane->changed, NULL) != 0) {
        pthread_mutex_destroy(&lane->lock);
        free(lane);
        return NULL;
    }
    lane->run = run;
    lane->arg = arg;
    /* The thread blocks every signal (it inherits the mask it starts with), as the pool's workers
     * do: a signal for the process reaches the application's threads. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const int started = pthread_create(&lane->thread, NULL, lane_main, lane);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (started != 0) {
        pthread_cond_destroy(&lane->changed);
        pthread_mutex_destroy(&lane->lock);
        free(lane);
        return NULL;
    }
    return lane;
}

bool cb_lane_wait(cb_lane *lane)
{
    pthread_mutex_lock(&lane->lock);
    while (lane->job != NULL)
        pthread_cond_wait(&lane->changed, &lane->lock);
    const bool failed = lane->failed;
    pthread_mutex_unlock(&lane->lock);
    return !failed;
}

void cb_lane_hand(cb_lane *lane, void *job, size_t size)
{
    pthread_mutex_lock(&lane->lock);
    while (lane->job != NULL)
        pthread_cond_wait(&lane->changed, &lane->lock);
    lane->job = job;
    lane->job_size = size;
    pthread_cond_broadcast(&lane->changed);
    pthread_mutex_unlock(&lane->lock);
}

void cb_lane_stop(cb_lane *lane)
{
    if (lane == NULL)
        return;
    pthread_mutex_lock(&lane->lock);
    while (lane->job != NULL)
        pthread_cond_wait(&lane->changed, &lane->lock);
    lane->stop = true;
    pthread_cond_broadcast(&lane->changed);
    pthread_mutex_unlock(&lane->lock);
    pthread_join(lane->thread, NULL);
    pthread_cond_destroy(&lane->changed);
    pthread_mutex_destroy(&lane->lock);
    free(lane);
}
