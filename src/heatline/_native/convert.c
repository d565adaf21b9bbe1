/* convert.c: the engine's results as Python objects. See convert.h.
 *
 * Every field is named as the profile names it (docs/profile-format.md), with _ns where the
 * profile has _s and timelines as [t_ns, value] lists, so the Python side renames nothing
 * (heatline/data/snapshot.py converts the units). Runs with the engine lock held (between
 * hl_engine_snapshot_begin and _end), so the tables stay still while they are read; the GIL is
 * held too, and nothing here waits for anything else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "convert.h"

#include <string.h>

#include "engine.h" /* the snapshot view and every result type the snapshot reads */

/* A list of n items, item i made by make(i, context). NULL with an exception set if the list or
 * an item could not be made. The lists of ids (files, functions, lines...) are built this way,
 * so each table needs only the function that makes one item. */
typedef PyObject *(*item_maker)(size_t index, const void *context);

static PyObject *list_of(size_t n, item_maker make, const void *context) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *item = make(i, context);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* A name read from a code object (frames.c) as a str equal to the original: its UTF-8 may
 * hold lone surrogates (a path's undecodable bytes, kept by surrogateescape), which
 * "surrogatepass" turns back into the same code points instead of failing the snapshot. */
static PyObject *name_str(const char *utf8) {
    return PyUnicode_DecodeUTF8(utf8, (Py_ssize_t)strlen(utf8), "surrogatepass");
}

/* ---- the tables (stats.h) ---------------------------------------------------------------- */

static PyObject *file_item(size_t i, const void *stats) {
    const hl_stats *s = stats;
    return Py_BuildValue("{s:N,s:O}", "path", name_str(s->files[i].path), "user",
                         s->files[i].user ? Py_True : Py_False);
}

static PyObject *function_item(size_t i, const void *stats) {
    const hl_function *f = &((const hl_stats *)stats)->functions[i];
    return Py_BuildValue("{s:I,s:N,s:N,s:i}", "file", f->file, "name", name_str(f->name),
                         "qualname", name_str(f->qualname), "first_line", f->first_line);
}

/* One (line, function) cell: a line shared by two functions is listed once for each. */
static PyObject *line_item(size_t i, const void *stats) {
    const hl_stats *s = stats;
    const hl_line_cell *c = &s->cells[i];
    const hl_line_stat *l = &s->lines[c->line];
    return Py_BuildValue("(IiIKKKK)", l->file, l->line, c->function,
                         (unsigned long long)c->ns[HL_PYTHON], (unsigned long long)c->ns[HL_NATIVE],
                         (unsigned long long)c->ns[HL_SYSTEM],
                         (unsigned long long)c->ns[HL_CPU_WAIT]);
}

static PyObject *thread_item(size_t i, const void *unused) {
    (void)unused;
    hl_thread_stat stat;
    const hl_thread_stat *t = &stat;
    hl_engine_thread_stat_locked(i, &stat);
    return Py_BuildValue(
        "{s:l,s:O,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "native_id", t->native_id, "main",
        t->main ? Py_True : Py_False, "comm",
        PyUnicode_DecodeUTF8(t->comm, (Py_ssize_t)strlen(t->comm), "replace"), "python_ns",
        (unsigned long long)t->ns[HL_PYTHON], "native_ns", (unsigned long long)t->ns[HL_NATIVE],
        "system_ns", (unsigned long long)t->ns[HL_SYSTEM], "cpu_wait_ns",
        (unsigned long long)t->ns[HL_CPU_WAIT], "unattributed_ns",
        (unsigned long long)t->unattributed_ns, "cpu_ns", (unsigned long long)t->cpu_ns,
        "engine_wait_ns", (unsigned long long)t->engine_wait_ns);
}

static PyObject *stack_item(size_t i, const void *stats) {
    const hl_stats *s = stats;
    const hl_stack_stat *st = &s->stacks[i];
    HL_ASSERT(st->frames_at + st->depth <= s->pool_length);
    PyObject *frames = PyTuple_New((Py_ssize_t)st->depth);
    for (uint32_t d = 0; frames != NULL && d < st->depth; d++) {
        uint64_t key = s->frame_pool[st->frames_at + d];
        PyObject *frame = Py_BuildValue("(Ii)", (unsigned)(key >> 32), (int)(uint32_t)key);
        if (frame == NULL) Py_CLEAR(frames);
        else PyTuple_SET_ITEM(frames, (Py_ssize_t)d, frame);
    }
    if (frames == NULL) return NULL;
    return Py_BuildValue("(NIKKKK)", frames, st->thread, (unsigned long long)st->ns[HL_PYTHON],
                         (unsigned long long)st->ns[HL_NATIVE],
                         (unsigned long long)st->ns[HL_SYSTEM],
                         (unsigned long long)st->ns[HL_CPU_WAIT]);
}

/* ---- the memory part of the snapshot (memory.h) ----------------------------------------- */

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

static PyObject *memory_dict(const hl_stats *s, const hl_memory_totals *m) {
    return Py_BuildValue(
        "{s:O,s:K,s:K,s:K,s:K,s:L,s:L,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:K}", "enabled",
        m->enabled ? Py_True : Py_False, "sampling_window_bytes",
        (unsigned long long)m->sampling_window_bytes, "alloc_python_bytes",
        (unsigned long long)m->alloc[HL_ALLOC_PYTHON], "alloc_native_bytes",
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

static PyObject *gpu_dict(const hl_stats *s, const hl_gpu_results *g) {
    const hl_nvml_results *sampling = g->sampling;
    const hl_cupti_results *tracing = g->tracing;
    PyObject *warnings = PyList_New(0), *devices = PyList_New(0), *lines = PyList_New(0),
             *kernels = PyList_New(0);
    for (int i = 0; warnings != NULL && i < g->nwarnings; i++) {
        PyObject *w =
            PyUnicode_DecodeUTF8(g->warnings[i], (Py_ssize_t)strlen(g->warnings[i]), "replace");
        if (w == NULL || PyList_Append(warnings, w) != 0) Py_CLEAR(warnings);
        Py_XDECREF(w);
    }
    for (unsigned i = 0; devices != NULL && i < sampling->ndevices; i++) {
        const hl_nvml_device *d = &sampling->devices[i];
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
    for (size_t i = 0; lines != NULL && i < tracing->nlines && i < s->nlines; i++) {
        const hl_cupti_line *l = &tracing->lines[i];
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
    for (size_t i = 0; kernels != NULL && i < tracing->nkernels; i++) {
        const hl_cupti_kernel *k = &tracing->kernels[i];
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
    return Py_BuildValue("{s:O,s:O,s:N,s:N,s:N,s:N,s:K,s:K,s:K,s:K,s:L,s:N}", "enabled",
                         g->nvml ? Py_True : Py_False, "kernel_tracing",
                         g->cupti ? Py_True : Py_False, "warnings", warnings, "devices", devices,
                         "lines", lines, "kernels", kernels, "records",
                         (unsigned long long)tracing->records, "unattributed_gpu_ns",
                         (unsigned long long)tracing->unmatched_ns, "unmatched_records",
                         (unsigned long long)tracing->unmatched_records, "dropped_records",
                         (unsigned long long)tracing->dropped_records, "alloc_peak_bytes",
                         (long long)tracing->alloc_peak, "alloc_peak_at",
                         peak_at(s, tracing->alloc_peak_line, tracing->alloc_peak_t_ns));
}

/* [[start_ns, end_ns], ...]: when profiling was on, the first 1024 periods; *count is how many
 * there were, *dropped the changes past the 4096 recorded. */
/* ---- when profiling was on ---------------------------------------------------------------- */

static PyObject *period_item(size_t i, const void *periods) {
    const uint64_t (*pairs)[2] = periods;
    return Py_BuildValue("[KK]", (unsigned long long)pairs[i][0], (unsigned long long)pairs[i][1]);
}

/* [[start_ns, end_ns], ...]: when profiling was on, the first 1024 periods; *count is how many
 * there were, *dropped the changes past the 4096 recorded. */
static PyObject *profiled_periods_locked(uint64_t *count, uint64_t *dropped) {
    HL_ASSERT_ENGINE_LOCKED();
    enum { SHOWN = 1024 };
    static uint64_t periods[SHOWN][2]; /* under the engine lock, taken by the snapshot */
    *dropped = 0;
    *count = hl_engine_profiled_periods(periods, SHOWN, dropped);
    size_t shown = *count < SHOWN ? (size_t)*count : SHOWN;
    return list_of(shown, period_item, periods);
}

/* ---- native frames (native.h) --------------------------------------------------------------- */

static PyObject *native_address_item(size_t i, const void *unused) {
    (void)unused;
    const char *symbol, *library;
    hl_native_address(i, &symbol, &library);
    /* A file's bytes, whatever they are: shown, never failing the snapshot. */
    PyObject *name = PyUnicode_DecodeUTF8(symbol, (Py_ssize_t)strlen(symbol), "replace");
    if (library == NULL) return Py_BuildValue("(NO)", name, Py_None);
    return Py_BuildValue("(NN)", name,
                         PyUnicode_DecodeUTF8(library, (Py_ssize_t)strlen(library), "replace"));
}

static PyObject *native_charge_item(size_t i, const void *charges) {
    const hl_native_charge *c = &((const hl_native_charge *)charges)[i];
    return Py_BuildValue("(IIK)", c->line, c->address, (unsigned long long)c->ns);
}

typedef struct native_lines {
    const hl_stats *stats;
    const hl_native_charge *charges;
} native_lines;

/* A line's charge by (file id, line): the snapshot's "lines" are (line, function) cells, so a
 * line id names no entry of theirs. */
static PyObject *native_line_item(size_t i, const void *lines) {
    const native_lines *n = lines;
    const hl_native_charge *c = &n->charges[i];
    HL_ASSERT(c->line < n->stats->nlines);
    const hl_line_stat *l = &n->stats->lines[c->line];
    return Py_BuildValue("(IiIK)", l->file, l->line, c->address, (unsigned long long)c->ns);
}

static PyObject *native_place_item(size_t i, const void *unused) {
    (void)unused;
    uint64_t ip;
    uint32_t mapping;
    hl_native_address_place(i, &ip, &mapping);
    if (mapping == UINT32_MAX) return Py_BuildValue("(OK)", Py_None, (unsigned long long)ip);
    return Py_BuildValue("(IK)", mapping, (unsigned long long)ip);
}

static PyObject *native_mapping_item(size_t i, const void *unused) {
    (void)unused;
    hl_native_mapping_info m;
    hl_native_mapping(i, &m);
    if (m.library == NULL)
        return Py_BuildValue("(KKKOs)", (unsigned long long)m.start, (unsigned long long)m.end,
                             (unsigned long long)m.offset, Py_None, m.build_id);
    return Py_BuildValue("(KKKNs)", (unsigned long long)m.start, (unsigned long long)m.end,
                         (unsigned long long)m.offset,
                         PyUnicode_DecodeUTF8(m.library, (Py_ssize_t)strlen(m.library), "replace"),
                         m.build_id);
}

static PyObject *native_other_item(size_t i, const void *others) {
    const hl_native_other *o = &((const hl_native_other *)others)[i];
    return Py_BuildValue("(lNKK)", o->tid,
                         PyUnicode_DecodeUTF8(o->comm, (Py_ssize_t)strlen(o->comm), "replace"),
                         (unsigned long long)o->cpu_ns, (unsigned long long)o->unnamed_ns);
}

/* {"enabled", "error" (errno), "reason", "threads_without", "unsampled_ns",
 *  "addresses": [(symbol, library or None)], "lines": [(file id, line, address index, ns)],
 *  "stacks": [(stack id, address index, ns)],
 *  "other_threads": [(tid, name, cpu ns, unnamed ns)] (threads without a thread state),
 *  "other_charges": [(index in other_threads, address index, ns)],
 *  "places": [(mapping index or None, instruction address)] (one per address),
 *  "mappings": [(start, end, file offset, library or None, build id in hex or "")]} */
static PyObject *native_dict(const hl_stats *s, const hl_native_results *n) {
    static const char *const reasons[] = {NULL, "refused", "shared_descriptors"};
    const char *reason = n->reason >= 0 && n->reason < 3 ? reasons[n->reason] : NULL;
    PyObject *addresses = list_of(n->naddresses, native_address_item, NULL);
    native_lines lines = {s, n->charges};
    PyObject *by_line = list_of(n->ncharges, native_line_item, &lines);
    PyObject *places = list_of(n->naddresses, native_place_item, NULL);
    PyObject *mappings = list_of(hl_native_nmappings(), native_mapping_item, NULL); /* named */
    return Py_BuildValue(
        "{s:O,s:i,s:z,s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "enabled",
        n->enabled ? Py_True : Py_False, "error", n->error, "reason", reason, "threads_without",
        (unsigned long long)n->threads_without, "unsampled_ns", (unsigned long long)n->unsampled_ns,
        "addresses", addresses, "lines", by_line, "stacks",
        list_of(n->nstack_charges, native_charge_item, n->stack_charges), "other_threads",
        list_of(n->nothers, native_other_item, n->others), "other_charges",
        list_of(n->nother_charges, native_charge_item, n->other_charges), "places", places,
        "mappings", mappings);
}

/* ---- the snapshot -------------------------------------------------------------------------- */

PyObject *hl_convert_snapshot_locked(const hl_snapshot *view) {
    HL_ASSERT_ENGINE_LOCKED();
    const hl_stats *s = view->stats;
    uint64_t periods_count, periods_dropped;
    PyObject *periods = profiled_periods_locked(&periods_count, &periods_dropped);
    return Py_BuildValue(
        "{s:N,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:N,s:K,s:K,s:N,"
        "s:N,"
        "s:{"
        "s:K,s:K,s:K,s:K},s:{s:i,s:l},s:N}",
        "profiled_periods", periods, "profiled_was_paused",
        hl_engine_was_paused() ? Py_True : Py_False, "profiled_periods_count",
        (unsigned long long)periods_count, "profiled_periods_dropped_changes",
        (unsigned long long)periods_dropped, "samples", (unsigned long long)view->samples,
        "sampled_ns", (unsigned long long)view->sampled_ns, "sampling_interval_ns",
        (unsigned long long)view->sampling_interval_ns, "lost_ns",
        (unsigned long long)view->lost_ns, "max_sample_gap_ns",
        (unsigned long long)view->max_gap_ns, "max_tick_ns", (unsigned long long)view->max_tick_ns,
        "long_gaps", (unsigned long long)view->long_gaps, "long_gap_ns",
        (unsigned long long)view->long_gap_ns, "stacks_reused",
        (unsigned long long)view->stacks_reused, "sampler_shared_descriptors",
        PyBool_FromLong(view->shared_descriptors), "files", list_of(s->nfiles, file_item, s),
        "functions", list_of(s->nfunctions, function_item, s), "lines",
        list_of(s->ncells, line_item, s), "threads", list_of(view->nthreads, thread_item, NULL),
        "stacks", list_of(s->nstacks, stack_item, s), "stacks_dropped_ns",
        (unsigned long long)s->stacks_dropped_ns, "stacks_frameless_ns",
        (unsigned long long)s->stacks_frameless_ns, "memory", memory_dict(s, view->memory), "gpu",
        gpu_dict(s, view->gpu), "asyncio", "loop_wait_ns", (unsigned long long)view->loop_wait_ns,
        "await_ns", (unsigned long long)view->await_ns, "woken_ns",
        (unsigned long long)view->woken_ns, "other_loop_wait_ns",
        (unsigned long long)view->other_loop_wait_ns, "cpu_wait", "error", view->schedstat_error,
        "tid", view->schedstat_tid, "native", native_dict(s, &view->native));
}

/* ---- labels (labels.h) --------------------------------------------------------------------- */

static PyObject *label_node_item(size_t i, const void *nodes) {
    const hl_label_node *n = &((const hl_label_node *)nodes)[i];
    uint32_t name = n->name & ~HL_LABEL_SLICED;
    PyObject *parent;
    if (n->parent == HL_NO_LABEL) {
        Py_INCREF(Py_None);
        parent = Py_None;
    } else {
        parent = PyLong_FromUnsignedLong(n->parent);
    }
    return Py_BuildValue("(NIKKK)", parent, name, (unsigned long long)n->count,
                         (unsigned long long)n->wall_ns, (unsigned long long)n->slices_dropped);
}

static PyObject *label_charge_item(size_t i, const void *charges) {
    const hl_label_charge *c = &((const hl_label_charge *)charges)[i];
    return Py_BuildValue("(KKKKKL)", (unsigned long long)c->ns[HL_PYTHON],
                         (unsigned long long)c->ns[HL_NATIVE], (unsigned long long)c->ns[HL_SYSTEM],
                         (unsigned long long)c->ns[HL_CPU_WAIT], (unsigned long long)c->alloc_bytes,
                         (long long)c->peak_bytes);
}

static PyObject *label_line_item(size_t i, const void *view) {
    const hl_labels_view *v = view;
    const hl_label_line *l = &v->lines[i];
    if (l->line >= v->stats->nlines)
        return Py_BuildValue("(IOOK)", l->node, Py_None, Py_None, 0ULL);
    const hl_line_stat *line = &v->stats->lines[l->line];
    return Py_BuildValue("(IIiK)", l->node, line->file, line->line, (unsigned long long)l->ns);
}

static PyObject *label_slice_item(size_t i, const void *slices) {
    const hl_label_slice *s = &((const hl_label_slice *)slices)[i];
    return Py_BuildValue("(IlKK)", s->node, s->tid, (unsigned long long)s->start_ns,
                         (unsigned long long)s->end_ns);
}

PyObject *hl_convert_labels_locked(const hl_labels_view *view) {
    HL_ASSERT_ENGINE_LOCKED();
    return Py_BuildValue("{s:N,s:n,s:N,s:N,s:N,s:K}", "nodes",
                         list_of(view->nnodes, label_node_item, view->nodes), "open",
                         (Py_ssize_t)view->open, "charges",
                         list_of(view->ncharges, label_charge_item, view->charges), "lines",
                         list_of(view->nlines, label_line_item, view), "slices",
                         list_of(view->nslices, label_slice_item, view->slices), "origin_ns",
                         (unsigned long long)view->origin_ns);
}

/* ---- the test hooks' stack ----------------------------------------------------------------- */

typedef struct walked_stack {
    const hl_stats *stats;
    const hl_frame *frames;
} walked_stack;

static PyObject *walked_frame_item(size_t i, const void *stack) {
    const walked_stack *w = stack;
    const hl_frame *frame = &w->frames[i];
    HL_ASSERT(frame->file < w->stats->nfiles && frame->function < w->stats->nfunctions);
    const hl_function *f = &w->stats->functions[frame->function];
    return Py_BuildValue("(NNiO)", name_str(w->stats->files[frame->file].path),
                         name_str(f->qualname), frame->line, frame->user ? Py_True : Py_False);
}

PyObject *hl_convert_stack_locked(const hl_snapshot *view, const hl_frame *frames, int depth) {
    HL_ASSERT_ENGINE_LOCKED();
    walked_stack stack = {view->stats, frames};
    return list_of((size_t)depth, walked_frame_item, &stack);
}

/* ---- heatline dump's result (remote.h) ------------------------------------------------------ */

/* Unlike the snapshot, a dump is no engine table: no lock is held, only the GIL. */

static PyObject *dump_frame_item(size_t i, const void *context) {
    const void *const *pair = context; /* the dump, then the thread */
    const hl_dump *dump = pair[0];
    const hl_dump_thread *thread = pair[1];
    const hl_frame *frame = &thread->frames[i];
    if (frame->file >= dump->names->nfiles || frame->function >= dump->names->nfunctions)
        return PyErr_Format(PyExc_RuntimeError, "a dump frame names no function");
    const hl_function *f = &dump->names->functions[frame->function];
    return Py_BuildValue("(NNNi)", name_str(dump->names->files[frame->file].path),
                         name_str(f->name), name_str(f->qualname), frame->line);
}

/* A lock a dump's thread holds in a frame (locks.h), as a dict. */
static PyObject *dump_lock_item(size_t i, const void *thread) {
    const hl_lock_ref *ref = &((const hl_dump_thread *)thread)->locks[i];
    static const char *places[] = {NULL, "local", "stack", "exit"};
    return Py_BuildValue(
        "{sKsKsKsKsssOsiss}", "lock", (unsigned long long)ref->lock, "sem",
        (unsigned long long)ref->sem, "owner", (unsigned long long)ref->owner, "count",
        (unsigned long long)ref->count, "kind",
        ref->kind == HL_LOCK_RLOCK ? "_thread.RLock" : "_thread.lock", "locked",
        ref->locked ? Py_True : Py_False, "frame", ref->frame, "place",
        ref->place >= HL_LOCK_LOCAL && ref->place <= HL_LOCK_EXIT ? places[ref->place] : "stack");
}

/* A local variable: (frame index, name, repr). */
static PyObject *dump_local_item(size_t i, const void *thread) {
    const hl_remote_local *local = &((const hl_dump_thread *)thread)->locals[i];
    return Py_BuildValue("(iNN)", local->frame, name_str(local->name), name_str(local->repr));
}

/* The name threading gave a thread, or None. */
static PyObject *python_name(const hl_dump_thread *t) {
    if (t->python_name[0] == '\0') Py_RETURN_NONE;
    return name_str(t->python_name);
}

static PyObject *dump_thread_item(size_t i, const void *context) {
    const hl_dump *dump = context;
    const hl_dump_thread *t = &dump->threads[i];
    const void *pair[2] = {dump, t};
    return Py_BuildValue(
        "{sKslsLsOsOsOsOsOsNsNsNsN}", "thread_id", (unsigned long long)t->thread_id, "native_id",
        t->native_id, "interpreter", (long long)t->interpreter, "main",
        t->main ? Py_True : Py_False, "holds_gil", t->holds_gil ? Py_True : Py_False, "stopped",
        t->stopped ? Py_True : Py_False, "complete", t->complete ? Py_True : Py_False, "truncated",
        t->truncated ? Py_True : Py_False, "frames",
        list_of((size_t)t->depth, dump_frame_item, pair), "python_name", python_name(t), "locals",
        list_of(t->nlocals, dump_local_item, t), "locks", list_of(t->nlocks, dump_lock_item, t));
}

/* A reader's sample: frames as (function id, line), the ids resolving in the reader's table
 * (hl_convert_remote_functions), so a reading converts no string. */
static PyObject *sample_frame_item(size_t i, const void *thread) {
    const hl_frame *frame = &((const hl_dump_thread *)thread)->frames[i];
    return Py_BuildValue("(Ii)", (unsigned int)frame->function, frame->line);
}

static PyObject *sample_thread_item(size_t i, const void *context) {
    const hl_dump_thread *t = &((const hl_dump *)context)->threads[i];
    char state[2] = {t->kernel_state, '\0'};
    return Py_BuildValue(
        "{sKslsLsOsOsOsOsisssNsN}", "thread_id", (unsigned long long)t->thread_id, "native_id",
        t->native_id, "interpreter", (long long)t->interpreter, "main",
        t->main ? Py_True : Py_False, "holds_gil", t->holds_gil ? Py_True : Py_False, "complete",
        t->complete ? Py_True : Py_False, "truncated", t->truncated ? Py_True : Py_False,
        "leaf_flags", t->leaf_flags, "kernel_state", state, "frames",
        list_of((size_t)t->depth, sample_frame_item, t), "python_name", python_name(t));
}

typedef struct function_range {
    const hl_stats *names;
    size_t first;
} function_range;

static PyObject *remote_function_item(size_t i, const void *context) {
    const function_range *range = context;
    const hl_function *f = &range->names->functions[range->first + i];
    const char *path = f->file < range->names->nfiles ? range->names->files[f->file].path : "";
    return Py_BuildValue("(NNNi)", name_str(path), name_str(f->name), name_str(f->qualname),
                         f->first_line);
}

PyObject *hl_convert_remote_functions(const hl_stats *names, size_t first) {
    function_range range = {names, first};
    return list_of(first < names->nfunctions ? names->nfunctions - first : 0, remote_function_item,
                   &range);
}

static const char *dump_error_name(int error) {
    switch (error) {
        case HL_DUMP_OK: return NULL;
        case HL_DUMP_NO_PROCESS: return "no-process";
        case HL_DUMP_REFUSED: return "refused";
        case HL_DUMP_NOT_PYTHON: return "not-python";
        case HL_DUMP_UNSUPPORTED: return "unsupported";
        case HL_DUMP_NO_MEMORY: return "no-memory";
        default: return "unreadable";
    }
}

PyObject *hl_convert_dump(const hl_dump *dump) {
    return Py_BuildValue("{szsisNsNsksOsOsNsKsKsOsN}", "error", dump_error_name(dump->error),
                         "os_error", dump->os_error, "message", name_str(dump->message), "binary",
                         name_str(dump->binary), "version", dump->version, "version_exact",
                         dump->version_exact ? Py_True : Py_False, "paused",
                         dump->paused ? Py_True : Py_False, "pause_note",
                         name_str(dump->pause_note), "pause_ns", (unsigned long long)dump->pause_ns,
                         "read_ns", (unsigned long long)dump->read_ns, "threads_complete",
                         dump->threads_complete ? Py_True : Py_False, "threads",
                         list_of(dump->nthreads, dump_thread_item, dump));
}

PyObject *hl_convert_remote_sample(const hl_dump *dump) {
    return Py_BuildValue(
        "{szsisNsKsOsN}", "error", dump_error_name(dump->error), "os_error", dump->os_error,
        "message", name_str(dump->message), "read_ns", (unsigned long long)dump->read_ns,
        "threads_complete", dump->threads_complete ? Py_True : Py_False, "threads",
        dump->error ? PyList_New(0) : list_of(dump->nthreads, sample_thread_item, dump));
}

static const char *inject_error_name(int error) {
    switch (error) {
        case HL_INJECT_OK: return NULL;
        case HL_INJECT_NO_PROCESS: return "no-process";
        case HL_INJECT_REFUSED: return "refused";
        case HL_INJECT_UNSUPPORTED: return "unsupported";
        case HL_INJECT_BUSY: return "busy";
        case HL_INJECT_LOAD_FAILED: return "load-failed";
        default: return "failed";
    }
}

PyObject *hl_convert_inject(const hl_inject_result *result) {
    return Py_BuildValue("{szsisNsisOsLsK}", "error", inject_error_name(result->error), "os_error",
                         result->os_error, "message", name_str(result->message), "tid", result->tid,
                         "loaded", result->loaded ? Py_True : Py_False, "value",
                         (long long)result->value, "held_ns", (unsigned long long)result->held_ns);
}
