/* module.c: heatline._native, the only binding between Python objects and the engine.
 *
 * It parses arguments, calls the engine and converts results; it holds no logic of its own.
 * The snapshot it builds names every field as the profile does (docs/profile-format.md), with
 * _ns where the profile has _s and timelines as [t_ns, value] lists, so the Python side renames
 * nothing (heatline/profile/snapshot.py converts the units). The contract is documented in
 * docs/engine-api.md.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#include "control.h" /* heatline ctl and the on/off record */
#include "engine.h"
#include "gpu.h"    /* the GPU part's results, converted in the snapshot */
#include "memory.h" /* the memory part's results, likewise */
#include "sigterm.h"
#include "periodic.h"

/* Copies a sequence of str into a malloc'ed array of UTF-8 strings. Returns 0, or -1 with a
 * Python exception set. */
static int strings_from_sequence(PyObject *sequence, char ***out, size_t *count) {
    *out = NULL;
    *count = 0;
    if (sequence == NULL || sequence == Py_None) return 0;
    PyObject *items = PySequence_Fast(sequence, "expected a sequence of str");
    if (items == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    char **strings = calloc((size_t)n + 1, sizeof(char *));
    if (strings == NULL) goto fail_memory;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *utf8 = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(items, i));
        if (utf8 == NULL) goto fail_strings;
        strings[i] = strdup(utf8);
        if (strings[i] == NULL) goto fail_memory;
    }
    Py_DECREF(items);
    *out = strings;
    *count = (size_t)n;
    return 0;
fail_memory:
    PyErr_NoMemory();
fail_strings:
    if (strings != NULL)
        for (Py_ssize_t i = 0; i < n; i++) free(strings[i]);
    free(strings);
    Py_DECREF(items);
    return -1;
}

PyDoc_STRVAR(start_doc,
             "start($module, /, interval_s, *, exclude_prefixes=(), only=(), exclude=(),\n"
             "      profile_all=False, opcode_flags=b'', paused=False, main_native_id=0,\n"
             "      memory_window=0, gpu=0, control=None)\n"
             "--\n\n"
             "Start the sampler thread. See docs/engine-api.md.");

static PyObject *native_start(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {
        "interval_s", "exclude_prefixes", "only",          "exclude", "profile_all", "opcode_flags",
        "paused",     "main_native_id",   "memory_window", "gpu",     "control",     NULL};
    double interval_s;
    PyObject *exclude_prefixes = NULL, *only = NULL, *exclude = NULL;
    int profile_all = 0, paused = 0;
    Py_buffer opcodes = {0};
    long main_native_id = 0;
    unsigned long long memory_window = 0;
    PyObject *control = Py_None;
    hl_config config;
    (void)module;

    memset(&config, 0, sizeof(config));
    config.gpu_mode = HL_GPU_OFF;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d|$OOOpy*plKiO:start", keywords, &interval_s,
                                     &exclude_prefixes, &only, &exclude, &profile_all, &opcodes,
                                     &paused, &main_native_id, &memory_window, &config.gpu_mode,
                                     &control))
        return NULL;
    if (control != Py_None &&
        !PyArg_ParseTuple(control, "ss;control must be (command_path, state_path) or None",
                          &config.control_command, &config.control_state))
        goto fail;
    if (!(interval_s > 0.0) || interval_s > 10.0) {
        PyErr_SetString(PyExc_ValueError, "interval_s must be in (0, 10]");
        goto fail;
    }
    if (opcodes.buf != NULL && opcodes.len != 0 && opcodes.len != 256) {
        PyErr_SetString(PyExc_ValueError, "opcode_flags must be 256 bytes");
        goto fail;
    }
    if (opcodes.buf != NULL && opcodes.len == 256) memcpy(config.opcode_flags, opcodes.buf, 256);
    if (strings_from_sequence(exclude_prefixes, &config.scope.exclude_prefixes,
                              &config.scope.nexclude_prefixes) != 0 ||
        strings_from_sequence(only, &config.scope.only, &config.scope.nonly) != 0 ||
        strings_from_sequence(exclude, &config.scope.exclude, &config.scope.nexclude) != 0)
        goto fail;
    config.scope.profile_all = profile_all;
    config.interval_ns = (uint64_t)(interval_s * 1e9);
    config.main_native_id = main_native_id ? main_native_id : (long)PyThread_get_thread_native_id();
    config.paused = paused;
    config.memory_window = memory_window;
    PyBuffer_Release(&opcodes);

    int err = hl_engine_start(&config); /* takes the scope */
    if (err == -EBUSY) {
        PyErr_SetString(PyExc_RuntimeError, "heatline is already profiling this process");
        return NULL;
    }
    if (err != 0) {
        errno = -err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_BEGIN_ALLOW_THREADS
    hl_engine_start_released(); /* never fails: what went wrong is in the snapshot's warnings */
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
fail:
    hl_scope_clear(&config.scope);
    PyBuffer_Release(&opcodes);
    return NULL;
}

PyDoc_STRVAR(stop_doc, "stop($module, /)\n--\n\nStop and join the sampler thread (idempotent).");

static PyObject *native_stop(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    hl_engine_stop_released(); /* flushes CUPTI's buffers, whose callbacks take the engine lock */
    Py_END_ALLOW_THREADS
    hl_engine_stop_parts(); /* with the GIL: it puts the Python allocators back */
    Py_BEGIN_ALLOW_THREADS
    hl_engine_stop();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(pause_doc, "pause($module, /)\n--\n\nStop charging time until resume().");
static PyObject *native_pause(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_control_set_paused(1);
    Py_BEGIN_ALLOW_THREADS
    hl_engine_wait_for_tick();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(resume_doc, "resume($module, /)\n--\n\nCharge time again after pause().");
static PyObject *native_resume(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_control_set_paused(0);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(
    chain_sigterm_doc,
    "_chain_sigterm($module, /)\n--\n\n"
    "After Python's SIGTERM handler is installed: make sure it runs even when the signal comes\n"
    "just before the main thread blocks (sigterm.h). Returns False when there is no handler.");
static PyObject *native_chain_sigterm(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(hl_sigterm_chain() == 0);
}

PyDoc_STRVAR(
    set_periodic_doc,
    "_set_periodic($module, period_s, callback, /)\n--\n\n"
    "Call callback() in the main thread every period_s seconds (0: never), the engine paused\n"
    "meanwhile (--profile-interval).");
static PyObject *native_set_periodic(PyObject *module, PyObject *args) {
    double period_s;
    PyObject *callback;
    (void)module;
    if (!PyArg_ParseTuple(args, "dO:_set_periodic", &period_s, &callback)) return NULL;
    if (!(period_s >= 0.0) || period_s > 1e9 ||
        (callback != Py_None && !PyCallable_Check(callback))) {
        PyErr_SetString(PyExc_ValueError, "period_s must be >= 0 and callback callable or None");
        return NULL;
    }
    hl_periodic_set((uint64_t)(period_s * 1e9), callback);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(suspend_doc,
             "_suspend_for_fork($module, /)\n--\n\n"
             "os.register_at_fork(before=...): join the sampler thread so the fork sees only the\n"
             "program's threads. Results are kept.");
static PyObject *native_suspend_for_fork(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_engine_suspend_for_fork();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(resume_after_fork_doc,
             "_resume_after_fork($module, /)\n--\n\n"
             "os.register_at_fork(after_in_parent=...): start the sampler thread again.");
static PyObject *native_resume_after_fork(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_engine_resume_after_fork();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(release_after_fork_doc,
             "_release_after_fork($module, /)\n--\n\n"
             "os.register_at_fork(after_in_child=...): when no session runs in this child, take\n"
             "out the memory hooks the parent installed (the child runs as without heatline).");
static PyObject *native_release_after_fork(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_engine_release_after_fork();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(is_running_doc, "is_running($module, /)\n--\n\nWhether the sampler thread runs.");
static PyObject *native_is_running(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(hl_engine_running());
}

/* ---- snapshot ---------------------------------------------------------------------------- */

/* A name read from a code object (frames.c) as a str equal to the original: its UTF-8 may
 * hold lone surrogates (a path's undecodable bytes, kept by surrogateescape), which
 * "surrogatepass" turns back into the same code points instead of failing the snapshot. */
static PyObject *name_str(const char *utf8) {
    return PyUnicode_DecodeUTF8(utf8, (Py_ssize_t)strlen(utf8), "surrogatepass");
}

static PyObject *files_list(const hl_stats *s) {
    PyObject *list = PyList_New((Py_ssize_t)s->nfiles);
    for (size_t i = 0; list != NULL && i < s->nfiles; i++) {
        PyObject *item = Py_BuildValue("{s:N,s:O}", "path", name_str(s->files[i].path), "user",
                                       s->files[i].user ? Py_True : Py_False);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *functions_list(const hl_stats *s) {
    PyObject *list = PyList_New((Py_ssize_t)s->nfunctions);
    for (size_t i = 0; list != NULL && i < s->nfunctions; i++) {
        const hl_function *f = &s->functions[i];
        PyObject *item =
            Py_BuildValue("{s:I,s:N,s:N,s:i}", "file", f->file, "name", name_str(f->name),
                          "qualname", name_str(f->qualname), "first_line", f->first_line);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *lines_list(const hl_stats *s) {
    PyObject *list = PyList_New((Py_ssize_t)s->nlines);
    for (size_t i = 0; list != NULL && i < s->nlines; i++) {
        const hl_line_stat *l = &s->lines[i];
        PyObject *item = Py_BuildValue(
            "(IiIKKK)", l->file, l->line, l->function, (unsigned long long)l->ns[HL_PYTHON],
            (unsigned long long)l->ns[HL_NATIVE], (unsigned long long)l->ns[HL_SYSTEM]);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *threads_list(const hl_snapshot *view) {
    PyObject *list = PyList_New((Py_ssize_t)view->nthreads);
    for (size_t i = 0; list != NULL && i < view->nthreads; i++) {
        hl_thread_stat stat;
        const hl_thread_stat *t = &stat;
        hl_engine_thread_stat(i, &stat);
        PyObject *item = Py_BuildValue(
            "{s:l,s:O,s:K,s:K,s:K,s:K,s:K,s:K}", "native_id", t->native_id, "main",
            t->main ? Py_True : Py_False, "python_ns", (unsigned long long)t->ns[HL_PYTHON],
            "native_ns", (unsigned long long)t->ns[HL_NATIVE], "system_ns",
            (unsigned long long)t->ns[HL_SYSTEM], "unattributed_ns",
            (unsigned long long)t->unattributed_ns, "cpu_ns", (unsigned long long)t->cpu_ns,
            "engine_wait_ns", (unsigned long long)t->engine_wait_ns);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *stacks_list(const hl_stats *s) {
    PyObject *list = PyList_New((Py_ssize_t)s->nstacks);
    for (size_t i = 0; list != NULL && i < s->nstacks; i++) {
        const hl_stack_stat *st = &s->stacks[i];
        PyObject *frames = PyTuple_New((Py_ssize_t)st->depth);
        for (uint32_t d = 0; frames != NULL && d < st->depth; d++) {
            uint64_t key = s->frame_pool[st->frames_at + d];
            PyObject *frame = Py_BuildValue("(Ii)", (unsigned)(key >> 32), (int)(uint32_t)key);
            if (frame == NULL) Py_CLEAR(frames);
            else PyTuple_SET_ITEM(frames, (Py_ssize_t)d, frame);
        }
        PyObject *item = frames == NULL ? NULL
                                        : Py_BuildValue("(NIKKK)", frames, st->thread,
                                                        (unsigned long long)st->ns[HL_PYTHON],
                                                        (unsigned long long)st->ns[HL_NATIVE],
                                                        (unsigned long long)st->ns[HL_SYSTEM]);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *timeline_list(const hl_timeline *tl) {
    PyObject *list = PyList_New(0);
    for (uint32_t i = 0; list != NULL && tl->buckets != NULL && i < tl->capacity; i++) {
        const hl_timeline_bucket *b = &tl->buckets[i];
        if (!b->used) continue;
        PyObject *point = Py_BuildValue("[KL]", (unsigned long long)b->max_t_ns, (long long)b->max);
        if (point == NULL || PyList_Append(list, point) != 0) Py_CLEAR(list);
        Py_XDECREF(point);
        if (list == NULL || b->last_t_ns == b->max_t_ns) continue;
        point = Py_BuildValue("[KL]", (unsigned long long)b->last_t_ns, (long long)b->last);
        if (point == NULL || PyList_Append(list, point) != 0) Py_CLEAR(list);
        Py_XDECREF(point);
    }
    return list;
}

static PyObject *memory_lines_list(const hl_stats *s) {
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list != NULL && i < s->nlines; i++) {
        const hl_line_stat *l = &s->lines[i];
        const hl_line_memory *m = l->memory;
        if (m == NULL) continue;
        PyObject *item = Py_BuildValue(
            "{s:I,s:i,s:I,s:K,s:K,s:K,s:L,s:L,s:K,s:K,s:K,s:N}", "file", l->file, "line", l->line,
            "function", l->function, "alloc_python_bytes",
            (unsigned long long)m->alloc[HL_ALLOC_PYTHON], "alloc_native_bytes",
            (unsigned long long)m->alloc[HL_ALLOC_NATIVE], "freed_bytes",
            (unsigned long long)m->freed, "growth_bytes", (long long)m->live, "peak_bytes",
            (long long)m->peak, "copy_bytes", (unsigned long long)m->copied, "alloc_samples",
            (unsigned long long)m->alloc_samples, "freed_samples",
            (unsigned long long)m->freed_samples, "timeline", timeline_list(&m->timeline));
        if (item == NULL || PyList_Append(list, item) != 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* {"file": file_id, "line": n, "t_ns": t}, or None when line is HL_NO_LINE: where and when a
 * peak was reached (the profile's peak_at and gpu.alloc_peak_at, with a file id). */
static PyObject *peak_at(const hl_stats *s, uint32_t line, uint64_t t_ns) {
    if (line == HL_NO_LINE || line >= s->nlines) Py_RETURN_NONE;
    return Py_BuildValue("{s:I,s:i,s:K}", "file", s->lines[line].file, "line", s->lines[line].line,
                         "t_ns", (unsigned long long)t_ns);
}

static PyObject *memory_dict(const hl_stats *s) {
    const hl_memory_totals *m = hl_memory_totals_get();
    return Py_BuildValue(
        "{s:O,s:K,s:K,s:K,s:K,s:L,s:L,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:K}", "enabled",
        m->enabled ? Py_True : Py_False, "sampling_window_bytes", (unsigned long long)m->window,
        "alloc_python_bytes", (unsigned long long)m->alloc[HL_ALLOC_PYTHON], "alloc_native_bytes",
        (unsigned long long)m->alloc[HL_ALLOC_NATIVE], "freed_bytes", (unsigned long long)m->freed,
        "live_bytes_at_end", (long long)m->live, "peak_bytes", (long long)m->peak, "peak_at",
        peak_at(s, m->peak_line, m->peak_t_ns), "copy_bytes", (unsigned long long)m->copied,
        "unattributed_alloc_bytes", (unsigned long long)m->unattributed_alloc,
        "unattributed_copy_bytes", (unsigned long long)m->unattributed_copied, "samples",
        (unsigned long long)m->samples, "untracked_samples", (unsigned long long)m->untracked,
        "redirected_slots", (unsigned long long)m->slots_patched, "memory_timeline",
        timeline_list(&m->timeline), "lines", memory_lines_list(s), "clock_origin_ns",
        (unsigned long long)m->origin_ns);
}

/* ---- the GPU part of the snapshot (gpu.h) -------------------------------------------------- */

static PyObject *gpu_line_key(const hl_stats *s, uint32_t line) {
    if (line == HL_NO_LINE || line >= s->nlines) Py_RETURN_NONE;
    return Py_BuildValue("(IiI)", s->lines[line].file, s->lines[line].line,
                         s->lines[line].function);
}

static PyObject *gpu_dict(const hl_stats *s) {
    const hl_gpu_results *g = hl_gpu_results_get();
    PyObject *warnings = PyList_New(0), *devices = PyList_New(0), *lines = PyList_New(0),
             *kernels = PyList_New(0);
    for (int i = 0; warnings != NULL && i < g->nwarnings; i++) {
        PyObject *w =
            PyUnicode_DecodeUTF8(g->warnings[i], (Py_ssize_t)strlen(g->warnings[i]), "replace");
        if (w == NULL || PyList_Append(warnings, w) != 0) Py_CLEAR(warnings);
        Py_XDECREF(w);
    }
    for (unsigned i = 0; devices != NULL && i < g->ndevices; i++) {
        const hl_gpu_device *d = &g->devices[i];
        PyObject *item = Py_BuildValue(
            "{s:I,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N}", "index", d->index, "name", d->name,
            "memory_total_bytes", (unsigned long long)d->memory_total, "samples",
            (unsigned long long)d->samples, "utilisation_pct_sum", (unsigned long long)d->util_sum,
            "idle_samples", (unsigned long long)d->idle_samples, "peak_memory_used_bytes",
            (unsigned long long)d->used_peak, "peak_memory_t_ns",
            (unsigned long long)d->used_peak_t_ns, "utilisation_timeline", timeline_list(&d->util),
            "memory_timeline", timeline_list(&d->used));
        if (item == NULL || PyList_Append(devices, item) != 0) Py_CLEAR(devices);
        Py_XDECREF(item);
    }
    for (size_t i = 0; lines != NULL && i < g->nlines && i < s->nlines; i++) {
        const hl_gpu_line *l = &g->lines[i];
        if (l->launches == 0 && l->gpu_ns == 0 && l->alloc == 0) continue;
        PyObject *item = Py_BuildValue(
            "{s:N,s:K,s:K,s:K,s:K,s:K,s:K}", "line", gpu_line_key(s, (uint32_t)i), "gpu_ns",
            (unsigned long long)l->gpu_ns, "gpu_launches", (unsigned long long)l->launches,
            "gpu_copy_h2d_bytes", (unsigned long long)l->copy_h2d, "gpu_copy_d2h_bytes",
            (unsigned long long)l->copy_d2h, "gpu_copy_other_bytes",
            (unsigned long long)l->copy_other, "gpu_alloc_bytes", (unsigned long long)l->alloc);
        if (item == NULL || PyList_Append(lines, item) != 0) Py_CLEAR(lines);
        Py_XDECREF(item);
    }
    for (size_t i = 0; kernels != NULL && i < g->nkernels; i++) {
        const hl_gpu_kernel *k = &g->kernels[i];
        PyObject *launchers = PyList_New(0);
        for (uint32_t j = 0; launchers != NULL && j < k->nlines; j++) {
            PyObject *item = Py_BuildValue("(NKK)", gpu_line_key(s, k->lines[j].line),
                                           (unsigned long long)k->lines[j].calls,
                                           (unsigned long long)k->lines[j].ns);
            if (item == NULL || PyList_Append(launchers, item) != 0) Py_CLEAR(launchers);
            Py_XDECREF(item);
        }
        PyObject *item =
            launchers == NULL
                ? NULL
                : Py_BuildValue("{s:s,s:s,s:K,s:K,s:N,s:K,s:K}", "raw_name", k->name, "name",
                                k->demangled ? k->demangled : k->name, "calls",
                                (unsigned long long)k->calls, "gpu_ns", (unsigned long long)k->ns,
                                "lines", launchers, "other_lines_calls",
                                (unsigned long long)k->other_lines_calls, "other_lines_gpu_ns",
                                (unsigned long long)k->other_lines_ns);
        if (item == NULL || PyList_Append(kernels, item) != 0) Py_CLEAR(kernels);
        Py_XDECREF(item);
    }
    if (warnings == NULL || devices == NULL || lines == NULL || kernels == NULL) {
        Py_XDECREF(warnings);
        Py_XDECREF(devices);
        Py_XDECREF(lines);
        Py_XDECREF(kernels);
        return NULL;
    }
    return Py_BuildValue(
        "{s:O,s:O,s:N,s:N,s:N,s:N,s:K,s:K,s:K,s:K,s:L,s:N}", "enabled",
        g->nvml ? Py_True : Py_False, "kernel_tracing", g->cupti ? Py_True : Py_False, "warnings",
        warnings, "devices", devices, "lines", lines, "kernels", kernels, "records",
        (unsigned long long)g->records, "unattributed_gpu_ns", (unsigned long long)g->unmatched_ns,
        "unmatched_records", (unsigned long long)g->unmatched_records, "dropped_records",
        (unsigned long long)g->dropped_records, "alloc_peak_bytes", (long long)g->alloc_peak,
        "alloc_peak_at", peak_at(s, g->alloc_peak_line, g->alloc_peak_t_ns));
}

/* [[start_ns, end_ns], ...]: when profiling was on, the first 1024 periods; *count is how many
 * there were, *dropped the changes past the 4096 recorded. */
static PyObject *profiled_periods(uint64_t *count, uint64_t *dropped) {
    enum { SHOWN = 1024 };
    static uint64_t periods[SHOWN][2]; /* under the engine lock, taken by the snapshot */
    *dropped = 0;
    *count = hl_control_periods(periods, SHOWN, dropped);
    size_t shown = *count < SHOWN ? (size_t)*count : SHOWN;
    PyObject *list = PyList_New((Py_ssize_t)shown);
    for (size_t i = 0; list != NULL && i < shown; i++) {
        PyObject *pair = Py_BuildValue("[KK]", (unsigned long long)periods[i][0],
                                       (unsigned long long)periods[i][1]);
        if (pair == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
    }
    return list;
}

PyDoc_STRVAR(
    snapshot_doc,
    "snapshot($module, /)\n--\n\nThe data aggregated so far, as documented in docs/engine-api.md.");

static PyObject *native_snapshot(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_snapshot view;
    hl_engine_snapshot_begin(&view);
    const hl_stats *s = view.stats;
    uint64_t periods_count, periods_dropped;
    PyObject *periods = profiled_periods(&periods_count, &periods_dropped);
    PyObject *result = Py_BuildValue(
        "{s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:K,s:K,s:N,s:N}",
        "profiled_periods", periods, "profiled_periods_count", (unsigned long long)periods_count,
        "profiled_periods_dropped_changes", (unsigned long long)periods_dropped, "samples",
        (unsigned long long)view.samples, "sampled_ns", (unsigned long long)view.sampled_ns,
        "sampling_interval_ns", (unsigned long long)view.interval_ns, "lost_ns",
        (unsigned long long)view.lost_ns, "max_sample_gap_ns", (unsigned long long)view.max_gap_ns,
        "max_tick_ns", (unsigned long long)view.max_tick_ns, "files", files_list(s), "functions",
        functions_list(s), "lines", lines_list(s), "threads", threads_list(&view), "stacks",
        stacks_list(s), "stacks_dropped_ns", (unsigned long long)s->stacks_dropped_ns,
        "stacks_frameless_ns", (unsigned long long)s->stacks_frameless_ns, "memory", memory_dict(s),
        "gpu", gpu_dict(s));
    hl_engine_snapshot_end();
    return result;
}

/* ---- test hooks -------------------------------------------------------------------------- */

PyDoc_STRVAR(
    line_of_doc,
    "_line_of($module, code, offset, /)\n--\n\n"
    "Test hook: the line of a byte offset in a code object, decoded the way the sampler does.");

static PyObject *native_line_of(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyCode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_line_of(code, offset)");
        return NULL;
    }
    int offset = (int)PyLong_AsLong(args[1]);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    int line;
    int err = hl_engine_line_of((uintptr_t)args[0], offset, &line);
    if (err == -EBUSY) {
        PyErr_SetString(PyExc_RuntimeError, "_line_of cannot run while profiling");
        return NULL;
    }
    if (err != 0) {
        PyErr_SetString(PyExc_RuntimeError, "the code object could not be read");
        return NULL;
    }
    return PyLong_FromLong(line);
}

PyDoc_STRVAR(current_stack_doc,
             "_current_stack($module, /)\n--\n\n"
             "Test hook: this thread's stack as the sampler reads it, innermost first, as\n"
             "(filename, qualname, line, user) tuples.");

static PyObject *native_current_stack(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_frame frames[HL_MAX_DEPTH];
    hl_snapshot view;
    hl_engine_snapshot_begin(&view);
    int depth = hl_engine_walk((uintptr_t)PyThreadState_Get(), frames, HL_MAX_DEPTH);
    if (depth == -EBUSY) {
        hl_engine_snapshot_end();
        PyErr_SetString(PyExc_RuntimeError, "_current_stack cannot run while profiling");
        return NULL;
    }
    PyObject *list = depth < 0 ? NULL : PyList_New(depth);
    for (int i = 0; list != NULL && i < depth; i++) {
        const hl_stats *s = view.stats;
        const hl_function *f = &s->functions[frames[i].function];
        PyObject *item =
            Py_BuildValue("(NNiO)", name_str(s->files[frames[i].file].path), name_str(f->qualname),
                          frames[i].line, frames[i].user ? Py_True : Py_False);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, item);
    }
    hl_engine_snapshot_end();
    if (depth < 0) PyErr_SetString(PyExc_RuntimeError, "the stack could not be read");
    return list;
}

PyDoc_STRVAR(hold_lock_doc,
             "_hold_engine_lock($module, seconds, /)\n--\n\n"
             "Test hook: holds the engine lock for `seconds`, the GIL released, as a long tick or "
             "a snapshot would.");

static PyObject *native_hold_engine_lock(PyObject *module, PyObject *arg) {
    (void)module;
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) return NULL;
    if (!(seconds >= 0.0 && seconds <= 10.0)) {
        PyErr_SetString(PyExc_ValueError, "_hold_engine_lock(seconds): 0 to 10");
        return NULL;
    }
    struct timespec hold = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    Py_BEGIN_ALLOW_THREADS
    hl_engine_lock();
    while (nanosleep(&hold, &hold) != 0 && errno == EINTR) {
    }
    hl_engine_unlock();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef native_methods[] = {
    {"start", (PyCFunction)(void (*)(void))native_start, METH_VARARGS | METH_KEYWORDS, start_doc},
    {"stop", native_stop, METH_NOARGS, stop_doc},
    {"pause", native_pause, METH_NOARGS, pause_doc},
    {"resume", native_resume, METH_NOARGS, resume_doc},
    {"is_running", native_is_running, METH_NOARGS, is_running_doc},
    {"_set_periodic", native_set_periodic, METH_VARARGS, set_periodic_doc},
    {"_suspend_for_fork", native_suspend_for_fork, METH_NOARGS, suspend_doc},
    {"_chain_sigterm", native_chain_sigterm, METH_NOARGS, chain_sigterm_doc},
    {"_resume_after_fork", native_resume_after_fork, METH_NOARGS, resume_after_fork_doc},
    {"_release_after_fork", native_release_after_fork, METH_NOARGS, release_after_fork_doc},
    {"snapshot", native_snapshot, METH_NOARGS, snapshot_doc},
    {"_line_of", (PyCFunction)(void (*)(void))native_line_of, METH_FASTCALL, line_of_doc},
    {"_current_stack", native_current_stack, METH_NOARGS, current_stack_doc},
    {"_hold_engine_lock", native_hold_engine_lock, METH_O, hold_lock_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot native_slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    /* One engine per process: the sampler reads the main interpreter only. */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "heatline._native",
    .m_doc = "heatline's sampling engine (C). See docs/engine-api.md.",
    .m_size = 0,
    .m_methods = native_methods,
    .m_slots = native_slots,
};

PyMODINIT_FUNC PyInit__native(void) {
    return PyModuleDef_Init(&native_module);
}
