/* The fast path of a compiled function's call from Python (in process only; no export
 * includes this file).
 *
 * Python checks the first call of each input shape signature and publishes what it found
 * into an aotk_call_state of the calling thread (each of up to THREAD_PLANS threads has
 * its own, since each has its own workspace): the inputs' dtypes and shapes (or, for an
 * input fed a Python scalar, the very object, converted once), every kernel argument that
 * does not change from call to call (weights, packed copies, workspace, dynamic dims) and
 * two sets of output arrays. aotk_call(states, values) then runs a call whose inputs
 * match its thread's plan with no Python bytecode at all: about a thousand instructions
 * where ctypes and the Python checks take twenty thousand (a kernel that took under
 * SHORT_KERNEL_NS runs with the GIL kept). Any mismatch returns the state's `declined`
 * object and Python takes its own, fully checked path. Only when the caller still holds
 * both arrays of an output does it run Python: the state's `refill`, which pools a fresh
 * one. A function that writes its variables (a training step) runs one call at a time
 * under its mutex, which Python's calls take too, and each call counts its writes.
 *
 * No Python.h: this reads only the object layouts declared below (CPython's object,
 * list, tuple and NumPy's array headers, 64-bit release builds), and calls the
 * interpreter through function pointers Python hands over. aotk/native_layout.py checks
 * every offset used here against the running interpreter before this file is loaded.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct py_object {
    intptr_t refcnt;
    struct py_object *type;
} py_object;

typedef struct {
    py_object head;
    intptr_t size;
    py_object **items;
} py_list;

typedef struct { /* a tuple's items follow its size, in the object itself */
    py_object head;
    intptr_t size;
    py_object *items[];
} py_tuple;

typedef struct { /* NumPy's PyArrayObject_fields, up to its flags */
    py_object head;
    char *data;
    int nd;
    intptr_t *dims;
    intptr_t *strides;
    py_object *base;
    py_object *descr;
    int flags;
} np_array;

enum { NPY_C_CONTIGUOUS = 0x1 };

typedef struct { /* the interpreter's functions this file calls */
    py_object *(*list_new)(intptr_t size);
    void *(*capsule_pointer)(py_object *capsule, const char *name);
    unsigned long (*thread_ident)(void);
    void *(*save_thread)(void);
    void (*restore_thread)(void *saved);
    void (*incref)(py_object *object);
    void (*decref)(py_object *object);
    py_object *(*call_no_args)(py_object *callable);
} aotk_py_api;

typedef void (*aotk_trampoline)(void *kernel, const int64_t *args);

/* Written by Python only while `ready` is 0 and with the GIL held; read here with the
 * GIL held, so a call sees either no plan or a whole one. A call that writes variables
 * moves `writes_seen` past its own writes (`count_writes`), also with the GIL held. */
typedef struct {
    int64_t ready;
    uint64_t thread;              /* the thread whose workspace `args` points into */
    int64_t *writes;              /* the process's count of variable writes ... */
    int64_t writes_seen;          /* ... when `args` got the weights' addresses */
    py_object *list_type, *tuple_type, *array_type, *declined;
    void *kernel;
    aotk_trampoline trampoline;   /* calls `kernel` with its arguments from an array */
    int64_t n_inputs, n_outputs, n_args, first_output;
    py_object *const *descrs;     /* each input's dtype object */
    const int64_t *ranks;         /* each input's rank */
    const int64_t *itemsizes;     /* each input's element size */
    const int64_t *shapes;        /* the inputs' planned shapes, one after another */
    const int64_t *out_ranks;     /* each output's rank */
    const int64_t *out_shapes;    /* the outputs' planned shapes, one after another */
    py_object *const *outputs;    /* slot s of output i at [s * n_outputs + i] */
    const int64_t *args;          /* the kernel's arguments; inputs and outputs filled here */
    py_object *refill;            /* called when an output has no free array; or NULL */
    py_object *holds;             /* what `args` points into: held while a kernel runs */
    py_object *const *scalars;    /* each input's expected object if fed a scalar; or NULL */
    const int64_t *converts;      /* each input's conversion and element count; or NULL */
    pthread_mutex_t *mutex;       /* held around the kernel by every call; or NULL */
    int64_t *const *versions;     /* the version of each variable the kernel writes */
    int64_t n_versions;
    int64_t short_kernel;         /* a call took < SHORT_KERNEL_NS: calls keep the GIL */
} aotk_call_state;

static const char STATE_NAME[] = "aotk.call_state";
enum { OUTPUT_SLOTS = 2, STACK_ARGS = 64, THREAD_PLANS = 8, SHORT_KERNEL_NS = 2000 };

static const aotk_py_api *py_api; /* set once, by aotk_call_init */

static py_object *declined(const aotk_call_state *st)
{
    py_api->incref(st->declined);
    return st->declined;
}

static int same_dims(const np_array *a, int64_t rank, const int64_t *shape)
{
    if (a->nd != rank)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (a->dims[d] != shape[d])
            return 0;
    return 1;
}

/* The items of `values`, a list or a tuple of the call's inputs; NULL for other types. */
static py_object **items_of(const aotk_call_state *st, py_object *values)
{
    if (values->type == st->list_type)
        return ((py_list *)values)->items;
    if (values->type == st->tuple_type)
        return ((py_tuple *)values)->items;
    return NULL;
}

/* Whether `st` is a plan published by thread `me`. */
static int published_for(const aotk_call_state *st, uint64_t me)
{
    return st->ready && st->thread == me;
}

/* The plan thread `me` published among a function's THREAD_PLANS, or NULL. */
static aotk_call_state *plan_of_thread(aotk_call_state *plans, uint64_t me)
{
    for (int p = 0; p < THREAD_PLANS; p++)
        if (published_for(&plans[p], me))
            return &plans[p];
    return NULL;
}

/* Whether a call on `values` may take plan `st`, published for its thread, as far as the
 * variables' writes and the inputs' container tell. */
static int plan_applies(const aotk_call_state *st, py_object *values)
{
    /* a list's and a tuple's sizes are at the same place (both are variable-size) */
    return *st->writes == st->writes_seen && items_of(st, values) != NULL &&
           ((py_list *)values)->size == st->n_inputs;
}

/* Conversions of an input fed another dtype than its placeholder's into the plan's
 * buffer for it, as NumPy's astype converts (C's conversions, rounding to nearest). */
#define CONVERSION(name, from, to)                                                       \
    static void name(const void *source, void *target, int64_t n)                       \
    {                                                                                    \
        const from *src = source;                                                        \
        to *dst = target;                                                                \
        for (int64_t k = 0; k < n; k++)                                                  \
            dst[k] = (to)src[k];                                                         \
    }
CONVERSION(f64_to_f32, double, float)
CONVERSION(i64_to_f32, int64_t, float)
CONVERSION(i32_to_f32, int32_t, float)
CONVERSION(u8_to_f32, uint8_t, float)
CONVERSION(f32_to_f64, float, double)
CONVERSION(i64_to_f64, int64_t, double)
CONVERSION(i32_to_f64, int32_t, double)
CONVERSION(u8_to_f64, uint8_t, double)

typedef void (*conversion)(const void *source, void *target, int64_t n);
/* by code: the order of native_inputs.CONVERSIONS (0: none); NumPy's bool is a uint8 */
static const conversion CONVERSIONS[] = {
    NULL,       f64_to_f32, i64_to_f32, i32_to_f32, u8_to_f32, u8_to_f32,
    f32_to_f64, i64_to_f64, i32_to_f64, u8_to_f64,  u8_to_f64,
};

/* The address of input `v` if it is a dense, aligned array of the planned dtype (the one
 * it is converted from, if any) and shape; 0 if not. */
static int64_t input_address(const aotk_call_state *st, py_object *v, int64_t i,
                             const int64_t *shape)
{
    if (v->type != st->array_type)
        return 0;
    const np_array *a = (const np_array *)v;
    if (a->descr != st->descrs[i] || !(a->flags & NPY_C_CONTIGUOUS) ||
        !same_dims(a, st->ranks[i], shape))
        return 0;
    if ((uintptr_t)a->data % (uintptr_t)st->itemsizes[i])
        return 0;
    return (int64_t)(intptr_t)a->data;
}

/* A pooled array of output `i` in the planned shape that nothing but its pool
 * references (its memory neither: a view of it would hold its base); NULL if none. */
static py_object *free_output(const aotk_call_state *st, int64_t i, const int64_t *shape)
{
    for (int s = 0; s < OUTPUT_SLOTS; s++) {
        py_object *out = st->outputs[s * st->n_outputs + i];
        if (out == NULL || !same_dims((const np_array *)out, st->out_ranks[i], shape))
            continue;
        const py_object *base = ((const np_array *)out)->base;
        if (out->refcnt == 1 && base != NULL && base->refcnt == 1)
            return out;
    }
    return NULL;
}

enum { MATCHED = 1, MISMATCHED = 0, NO_FREE_OUTPUT = -1, RAISED = -2 };

/* Fill `args` from the template and the call's arrays: MATCHED, MISMATCHED (an input
 * not as planned) or NO_FREE_OUTPUT (the caller holds every array of an output). */
static int fill_args(const aotk_call_state *st, py_object *values, int64_t *args,
                     py_object **outs)
{
    py_object **items = items_of(st, values);
    memcpy(args, st->args, (size_t)st->n_args * sizeof *args);
    const int64_t *shape = st->shapes;
    /* a scalar's array, or a converted input's buffer, is in the template */
    py_object *const *scalars = st->scalars;
    const int64_t *converts = st->converts;
    for (int64_t i = 0; i < st->n_inputs; shape += st->ranks[i], i++) {
        py_object *scalar = scalars != NULL ? scalars[i] : NULL;
        int64_t at = scalar == NULL ? input_address(st, items[i], i, shape) : 0;
        if (scalar != NULL ? items[i] != scalar : !at)
            return MISMATCHED;
        if (at && (converts == NULL || !converts[2 * i]))
            args[i] = at;
    }
    shape = st->out_shapes;
    for (int64_t i = 0; i < st->n_outputs; shape += st->out_ranks[i], i++) {
        outs[i] = free_output(st, i, shape);
        if (!outs[i])
            return NO_FREE_OUTPUT;
        args[st->first_output + i] = (int64_t)(intptr_t)((np_array *)outs[i])->data;
    }
    return MATCHED;
}

/* fill_args; where the caller holds every array of an output (a loop collecting them),
 * `refill` gives each output a fresh one first, and the call is matched again: the
 * Python it runs may have let another thread publish another plan. */
static int fill_or_refill(const aotk_call_state *st, uint64_t me, py_object *values,
                          int64_t *args, py_object **outs)
{
    int got = fill_args(st, values, args, outs);
    if (got != NO_FREE_OUTPUT || st->refill == NULL)
        return got;
    py_object *none = py_api->call_no_args(st->refill);
    if (none == NULL)
        return RAISED;
    py_api->decref(none);
    if (!published_for(st, me) || !plan_applies(st, values))
        return MISMATCHED;
    return fill_args(st, values, args, outs);
}

void aotk_call_init(const aotk_py_api *api)
{
    py_api = api;
}

/* How many threads' plans a function's native path keeps (Python checks it). */
int64_t aotk_thread_plans(void)
{
    return THREAD_PLANS;
}

/* The mutex of a function whose calls write its variables: Python's calls take it
 * through ctypes, which releases the GIL meanwhile, as `run` does. */
size_t aotk_mutex_size(void)
{
    return sizeof(pthread_mutex_t);
}

int aotk_mutex_init(pthread_mutex_t *mutex)
{
    return pthread_mutex_init(mutex, NULL);
}

void aotk_mutex_lock(pthread_mutex_t *mutex)
{
    pthread_mutex_lock(mutex);
}

void aotk_mutex_unlock(pthread_mutex_t *mutex)
{
    pthread_mutex_unlock(mutex);
}

static int64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The inputs' conversions, then the kernel. */
static void convert_and_run(const int64_t *converts, int64_t n_inputs,
                            const int64_t *args, py_object *const *inputs,
                            aotk_trampoline trampoline, void *kernel, pthread_mutex_t *mutex)
{
    for (int64_t i = 0; converts != NULL && i < n_inputs; i++)
        if (converts[2 * i])
            CONVERSIONS[converts[2 * i]](((const np_array *)inputs[i])->data,
                                         (void *)(intptr_t)args[i], converts[2 * i + 1]);
    if (mutex != NULL)
        pthread_mutex_lock(mutex);
    trampoline(kernel, args);
    if (mutex != NULL)
        pthread_mutex_unlock(mutex);
}

/* `convert_and_run`, with the GIL released: other Python threads run meanwhile, and may
 * publish another plan, so what is read of this one is read first (what `args` and
 * `converts` point into is held), and the caller reads no more of it after this. The
 * conversion buffers are the plan's, which only its thread runs. Once a call of the plan
 * took under SHORT_KERNEL_NS, its calls keep the GIL: with other threads waiting for it,
 * handing it over and back costs more than such a call, and they wait no longer than
 * the call (the same work each time: the plan fixes the shapes). A function with a
 * mutex always lets the GIL go: a Python-path call may hold the mutex and wait for the
 * GIL. */
static void run_kernel(aotk_call_state *st, const int64_t *args, py_object *const *inputs)
{
    const py_object *holds = st->holds; /* held by the caller: its address names the plan */
    int64_t n_inputs = st->n_inputs;
    const int64_t *converts = st->converts;
    aotk_trampoline trampoline = st->trampoline;
    void *kernel = st->kernel;
    pthread_mutex_t *mutex = st->mutex;
    if (mutex == NULL && st->short_kernel) {
        convert_and_run(converts, n_inputs, args, inputs, trampoline, kernel, NULL);
        return;
    }
    void *saved = py_api->save_thread();
    int64_t start = mutex == NULL ? monotonic_ns() : 0;
    convert_and_run(converts, n_inputs, args, inputs, trampoline, kernel, mutex);
    int64_t took = mutex == NULL ? monotonic_ns() - start : SHORT_KERNEL_NS;
    py_api->restore_thread(saved);
    if (st->holds == holds) /* not another plan, published meanwhile by another thread */
        st->short_kernel = took < SHORT_KERNEL_NS;
}

/* After a call that wrote its variables, with the GIL held: each one's version and the
 * process's count of writes move (other functions' packed copies of them are stale), as
 * `runtime.bump_version` moves them. Every plan of this function keeps those variables'
 * arrays, written in place, so any of its `plans` published when the count read
 * `before` counts these writes as seen, whichever thread published it meanwhile. */
static void count_writes(const aotk_call_state *st, aotk_call_state *plans)
{
    int64_t before = *st->writes, n = st->n_versions;
    for (int64_t i = 0; i < n; i++)
        (*st->versions[i])++;
    *st->writes = before + n;
    for (int p = 0; p < THREAD_PLANS; p++)
        if (plans[p].writes_seen == before)
            plans[p].writes_seen = before + n;
}

/* Run the kernel on a matched call of plan `st`, one of `plans`; a new list of its
 * outputs (NULL: out of memory, the interpreter's exception set). `objects`: the
 * outputs, then the inputs. */
static py_object *run(aotk_call_state *st, aotk_call_state *plans,
                      py_object *values, const int64_t *args, py_object **objects)
{
    py_object *result = py_api->list_new(st->n_outputs);
    if (result == NULL)
        return NULL;
    for (int64_t i = 0; i < st->n_outputs; i++) {
        py_api->incref(objects[i]);
        ((py_list *)result)->items[i] = objects[i];
    }
    /* the inputs are held while the kernel reads them: with the GIL released, another
     * thread may take them out of `values` */
    int64_t n_inputs = st->n_inputs;
    py_object **inputs = objects + st->n_outputs;
    memcpy(inputs, items_of(st, values), (size_t)n_inputs * sizeof *inputs);
    for (int64_t i = 0; i < n_inputs; i++)
        py_api->incref(inputs[i]);
    py_object *holds = st->holds;
    py_api->incref(holds); /* what this plan's arguments point into stays */
    run_kernel(st, args, inputs);
    if (st->n_versions)
        count_writes(st, plans);
    py_api->decref(holds);
    for (int64_t i = 0; i < n_inputs; i++)
        py_api->decref(inputs[i]);
    return result;
}

/* METH_O, bound to a capsule of the function's THREAD_PLANS states: `values` is the
 * call's list (or tuple) of input arrays. A new list of the outputs, a new reference to
 * `declined`, or NULL if `refill` raised. */
py_object *aotk_call(py_object *self, py_object *values)
{
    aotk_call_state *plans = py_api->capsule_pointer(self, STATE_NAME);
    if (plans == NULL)
        return NULL;
    uint64_t me = py_api->thread_ident();
    aotk_call_state *st = plan_of_thread(plans, me);
    if (st == NULL || !plan_applies(st, values))
        return declined(plans);
    /* every input and output is a kernel argument: n_args bounds both arrays */
    int64_t stack_args[STACK_ARGS];
    py_object *stack_objects[STACK_ARGS];
    int large = st->n_args > STACK_ARGS;
    int64_t *args = large ? malloc((size_t)st->n_args * sizeof *args) : stack_args;
    py_object **objects =
        large ? malloc((size_t)st->n_args * sizeof *objects) : stack_objects;
    int got = args != NULL && objects != NULL ? fill_or_refill(st, me, values, args, objects)
                                              : MISMATCHED;
    py_object *result = NULL; /* the exception `refill` raised */
    if (got == MATCHED)
        result = run(st, plans, values, args, objects);
    else if (got != RAISED)
        result = declined(st);
    if (large) {
        free(args);
        free(objects);
    }
    return result;
}
