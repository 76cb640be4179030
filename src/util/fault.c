/* SPDX-License-Identifier: BSD-2-Clause */
#include "fault.h"

#include <stdatomic.h>

typedef struct fault_state {
    atomic_int_fast64_t nth; /* 0: disarmed */
    atomic_int_fast64_t count;
    atomic_int error;
    atomic_bool sticky, fired;
} fault_state;

static fault_state faults[CB_FAULT_STEPS];
/* Whether any step is armed: the fast path of every check. */
static atomic_int armed;

void cb_fault_arm(cb_fault_step step, int64_t nth, int error, bool sticky)
{
    fault_state *f = &faults[step];
    const bool was_armed = atomic_load(&f->nth) != 0;
    atomic_store(&f->count, 0);
    atomic_store(&f->error, error);
    atomic_store(&f->sticky, sticky);
    atomic_store(&f->fired, false);
    atomic_store(&f->nth, nth);
    atomic_fetch_add(&armed, (nth != 0) - was_armed);
}

int64_t cb_fault_count(cb_fault_step step)
{
    return atomic_load(&faults[step].count);
}

bool cb_fault_fired(cb_fault_step step)
{
    return atomic_load(&faults[step].fired);
}

/* One use of a step: counted, and failed when it is the armed one (or after it, sticky). */
static int use(cb_fault_step step)
{
    fault_state *f = &faults[step];
    const int64_t n = atomic_fetch_add(&f->count, 1) + 1;
    const int64_t nth = atomic_load(&f->nth);
    if (nth == 0 || n < nth || (n > nth && !atomic_load(&f->sticky)))
        return 0;
    atomic_store(&f->fired, true);
    const int error = atomic_load(&f->error);
    return error != 0 ? error : -2; /* an allocation fails without an errno */
}

int cb_fault_check(cb_fault_step step)
{
    if (__builtin_expect(atomic_load_explicit(&armed, memory_order_relaxed) == 0, 1)) {
        /* Counted even when disarmed, so that a test learns how many uses a call makes. */
        atomic_fetch_add_explicit(&faults[step].count, 1, memory_order_relaxed);
        if (step != CB_FAULT_ALLOC)
            atomic_fetch_add_explicit(&faults[CB_FAULT_IO].count, 1, memory_order_relaxed);
        return 0;
    }
    const int error = use(step);
    if (error != 0 || step == CB_FAULT_ALLOC)
        return error;
    return use(CB_FAULT_IO);
}
