/* module.c: heatline._native, the only binding between Python objects and the engine.
 *
 * It parses arguments, calls the engine and converts results (convert.c builds the Python
 * objects); it holds no logic of its own. The contract is documented in docs/engine-api.md.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <string.h>

#include "convert.h"
#include "engine.h"
#include "modhooks.h"

/* The ranges of the start options are declared once, in heatline/options.py, whose parsers
 * apply them; setup.py compiles this file with them: HL_MAX_SAMPLING_INTERVAL_S (seconds, and
 * greater than 0), HL_MIN_ and HL_MAX_MEMORY_SAMPLING_WINDOW_BYTES (or 0: memory profiling off)
 * and HL_MAX_WRITE_INTERVAL_S. So the engine refuses exactly what the command line refuses. */
#if !defined(HL_MAX_SAMPLING_INTERVAL_S) || !defined(HL_MAX_WRITE_INTERVAL_S) ||                   \
    !defined(HL_MIN_MEMORY_SAMPLING_WINDOW_BYTES) || !defined(HL_MAX_MEMORY_SAMPLING_WINDOW_BYTES)
#error "build the engine with setup.py: it defines the option ranges from heatline/options.py"
#endif
#define HL_TEXT_(x) #x
#define HL_TEXT(x) HL_TEXT_(x) /* a macro's value as a string literal, for messages */

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
             "start($module, /, sampling_interval_s, *, exclude_prefixes=(), only=(), exclude=(),\n"
             "      profile_all=False, opcode_flags=b'', paused=False, main_native_id=0,\n"
             "      memory_sampling_window_bytes=0, gpu=0, control=None, native=False)\n"
             "--\n\n"
             "Start the sampler thread. See docs/engine-api.md.");

static PyObject *native_start(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"sampling_interval_s",
                               "exclude_prefixes",
                               "only",
                               "exclude",
                               "profile_all",
                               "opcode_flags",
                               "paused",
                               "main_native_id",
                               "memory_sampling_window_bytes",
                               "gpu",
                               "control",
                               "native",
                               NULL};
    double sampling_interval_s;
    PyObject *exclude_prefixes = NULL, *only = NULL, *exclude = NULL;
    int profile_all = 0, paused = 0;
    Py_buffer opcodes = {0};
    long main_native_id = 0;
    unsigned long long memory_sampling_window_bytes = 0;
    PyObject *control = Py_None;
    hl_config config;
    (void)module;

    memset(&config, 0, sizeof(config));
    config.gpu_mode = HL_GPU_OFF;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "d|$OOOpy*plKiOp:start", keywords, &sampling_interval_s,
            &exclude_prefixes, &only, &exclude, &profile_all, &opcodes, &paused, &main_native_id,
            &memory_sampling_window_bytes, &config.gpu_mode, &control, &config.native))
        return NULL;
    if (control != Py_None &&
        !PyArg_ParseTuple(control, "ss;control must be (command_path, state_path) or None",
                          &config.control_command, &config.control_state))
        goto fail;
    /* engine.h's ranges, which the command line's parsers also apply (heatline/options.py). */
    if (!(sampling_interval_s > 0.0) || sampling_interval_s > HL_MAX_SAMPLING_INTERVAL_S) {
        PyErr_SetString(PyExc_ValueError, "sampling_interval_s must be in (0, " HL_TEXT(
                                              HL_MAX_SAMPLING_INTERVAL_S) "]");
        goto fail;
    }
    if (memory_sampling_window_bytes != 0 &&
        (memory_sampling_window_bytes < HL_MIN_MEMORY_SAMPLING_WINDOW_BYTES ||
         memory_sampling_window_bytes > HL_MAX_MEMORY_SAMPLING_WINDOW_BYTES)) {
        PyErr_Format(PyExc_ValueError,
                     "memory_sampling_window_bytes must be 0 (off) or in [%llu, %llu]",
                     HL_MIN_MEMORY_SAMPLING_WINDOW_BYTES, HL_MAX_MEMORY_SAMPLING_WINDOW_BYTES);
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
    config.sampling_interval_ns = (uint64_t)(sampling_interval_s * 1e9);
    config.main_native_id = main_native_id ? main_native_id : (long)PyThread_get_thread_native_id();
    config.paused = paused;
    config.memory_sampling_window_bytes = memory_sampling_window_bytes;
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
    hl_engine_pause(1);
    Py_BEGIN_ALLOW_THREADS
    hl_engine_wait_for_tick();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(resume_doc, "resume($module, /)\n--\n\nCharge time again after pause().");
static PyObject *native_resume(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_engine_pause(0);
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
    return PyBool_FromLong(hl_engine_chain_sigterm() == 0);
}

PyDoc_STRVAR(
    sigterm_delivered_doc,
    "_sigterm_delivered($module, /)\n--\n\n"
    "In Python's SIGTERM handler: whether a SIGTERM really came since _chain_sigterm() (False:\n"
    "the call is _thread.interrupt_main's simulation); True when nothing is chained.");
static PyObject *native_sigterm_delivered(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(hl_engine_sigterm_delivered());
}

PyDoc_STRVAR(record_exit_status_doc,
             "_record_exit_status($module, path, /)\n--\n\n"
             "Write the status this process exits with to the file `path` once it has exited\n"
             "(exitstatus.h). Returns False when it cannot be recorded.");
static PyObject *native_record_exit_status(PyObject *module, PyObject *path) {
    (void)module;
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(path, &bytes)) return NULL;
    int recorded = hl_engine_record_exit_status(PyBytes_AS_STRING(bytes)) == 0;
    Py_DECREF(bytes);
    return PyBool_FromLong(recorded);
}

PyDoc_STRVAR(
    check_signals_doc,
    "_check_signals($module, /)\n--\n\n"
    "Run the Python handlers of the signals that came meanwhile, now (PyErr_CheckSignals);\n"
    "raises what they raise.");
static PyObject *native_check_signals(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    if (PyErr_CheckSignals() < 0) return NULL;
    Py_RETURN_NONE;
}

extern char **environ;

PyDoc_STRVAR(
    environ_doc,
    "_environ($module, /)\n--\n\n"
    "The process's C environment now, as a list of b'NAME=value': what an exec without an\n"
    "explicit environment passes on (os.putenv's, os.unsetenv's and a C library's setenv's\n"
    "changes included; os.environ is a copy made at start-up).");
static PyObject *native_environ(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        PyObject *item = PyBytes_FromString(*entry);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

PyDoc_STRVAR(
    set_periodic_doc,
    "_set_periodic($module, write_interval_s, callback, /)\n--\n\n"
    "Call callback() in the main thread every write_interval_s seconds (0: never), the engine\n"
    "paused meanwhile (--write-interval).");
static PyObject *native_set_periodic(PyObject *module, PyObject *args) {
    double write_interval_s;
    PyObject *callback;
    (void)module;
    if (!PyArg_ParseTuple(args, "dO:_set_periodic", &write_interval_s, &callback)) return NULL;
    if (!(write_interval_s >= 0.0) || write_interval_s > HL_MAX_WRITE_INTERVAL_S ||
        (callback != Py_None && !PyCallable_Check(callback))) {
        PyErr_SetString(PyExc_ValueError,
                        "write_interval_s must be in [0, " HL_TEXT(
                            HL_MAX_WRITE_INTERVAL_S) "] and callback callable or None");
        return NULL;
    }
    hl_engine_set_periodic((uint64_t)(write_interval_s * 1e9), callback);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(on_new_threads_doc,
             "_on_new_threads($module, callback, /)\n--\n\n"
             "Call callback() in the main thread after a tick that saw threads not seen before,\n"
             "and after the next while it returns true (None: never). Cleared by stop().");
static PyObject *native_on_new_threads(PyObject *module, PyObject *callback) {
    (void)module;
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_ValueError, "callback must be callable or None");
        return NULL;
    }
    hl_engine_on_new_threads(callback);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(
    watch_detach_doc,
    "_watch_detach($module, stop_path, request_path, callback, /)\n--\n\n"
    "heatline attach: while the engine runs, call callback() once, on a short-lived thread of\n"
    "the engine's, when stop_path exists or request_path does not (callback None: stop\n"
    "watching). Cleared by stop().");
static PyObject *native_watch_detach(PyObject *module, PyObject *args) {
    PyObject *stop_path, *request_path, *callback;
    (void)module;
    if (!PyArg_ParseTuple(args, "O&O&O:_watch_detach", PyUnicode_FSConverter, &stop_path,
                          PyUnicode_FSConverter, &request_path, &callback))
        return NULL;
    PyObject *result = NULL;
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_ValueError, "callback must be callable or None");
    } else if (hl_engine_watch_detach(PyBytes_AS_STRING(stop_path), PyBytes_AS_STRING(request_path),
                                      callback) != 0) {
        PyErr_SetString(PyExc_ValueError, "path too long");
    } else {
        Py_INCREF(Py_None);
        result = Py_None;
    }
    Py_DECREF(stop_path);
    Py_DECREF(request_path);
    return result;
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

/* ---- labels: regions and modules (labels.h) ----------------------------------------------- */

PyDoc_STRVAR(label_push_doc,
             "label_push($module, name, /)\n--\n\n"
             "Enters label `name` (an int id) on the calling thread; returns the token that\n"
             "closes it (0: not recorded). See docs/engine-api.md.");
static PyObject *native_label_push(PyObject *module, PyObject *name) {
    (void)module;
    unsigned long id = PyLong_AsUnsignedLong(name);
    if (id == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (id > UINT32_MAX || (id & ~(unsigned long)HL_LABEL_SLICED) >= HL_LABEL_SLICED - 1) {
        PyErr_SetString(PyExc_OverflowError, "label id out of range");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(hl_engine_label_push((uint32_t)id));
}

PyDoc_STRVAR(label_pop_doc, "label_pop($module, token, /)\n--\n\n"
                            "Closes the calling thread's entry `token`; whether it was open.");
static PyObject *native_label_pop(PyObject *module, PyObject *token) {
    (void)module;
    unsigned long long value = PyLong_AsUnsignedLongLong(token);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    return PyBool_FromLong(hl_engine_label_pop(value));
}

PyDoc_STRVAR(module_hooks_doc,
             "module_hooks($module, resolver, /)\n--\n\n"
             "Sets the resolver of torch's module hooks (module_pre_hook, module_post_hook):\n"
             "resolver(module) -> {id(submodule): label id}; None turns them off.");
static PyObject *native_module_hooks(PyObject *module, PyObject *resolver) {
    (void)module;
    if (resolver != Py_None && !PyCallable_Check(resolver)) {
        PyErr_SetString(PyExc_TypeError, "resolver must be callable or None");
        return NULL;
    }
    hl_modhooks_set(resolver, hl_engine_label_push, hl_engine_label_pop);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(module_pre_hook_doc, "module_pre_hook($module, module, *args, /)\n--\n\n"
                                  "torch's global forward pre-hook: enters module's label.");
static PyObject *native_module_pre_hook(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs >= 1) hl_modhooks_enter(args[0]);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(module_post_hook_doc, "module_post_hook($module, module, *args, /)\n--\n\n"
                                   "torch's global forward hook: closes module's label.");
static PyObject *native_module_post_hook(PyObject *module, PyObject *const *args,
                                         Py_ssize_t nargs) {
    (void)module;
    if (nargs >= 1) hl_modhooks_exit(args[0]);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(label_current_doc, "label_current($module, /)\n--\n\n"
                                "The calling thread's innermost open node, or None.");
static PyObject *native_label_current(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    uint32_t node = hl_engine_label_current();
    if (node == HL_NO_LABEL) Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(node);
}

PyDoc_STRVAR(labels_doc, "labels($module, /)\n--\n\n"
                         "The labels' nodes and what was charged to them (docs/engine-api.md).");
static PyObject *native_labels(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_labels_view view;
    hl_engine_labels_begin(&view);
    PyObject *result = hl_convert_labels_locked(&view);
    hl_engine_labels_end(&view);
    return result;
}

PyDoc_STRVAR(
    snapshot_doc,
    "snapshot($module, /)\n--\n\nThe data aggregated so far, as documented in docs/engine-api.md.");

static PyObject *native_snapshot(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    hl_snapshot view;
    hl_engine_snapshot_begin(&view);
    PyObject *result = hl_convert_snapshot_locked(&view);
    hl_engine_snapshot_end();
    return result;
}

/* ---- heatline dump ------------------------------------------------------------------------ */

PyDoc_STRVAR(dump_doc,
             "dump($module, pid, pause, locals=False, /)\n--\n\n"
             "Every thread's Python stack of process pid, read from outside it (its threads\n"
             "stopped meanwhile if pause; each frame's local variables if locals). See\n"
             "docs/engine-api.md.");

static PyObject *native_dump(PyObject *module, PyObject *args) {
    (void)module;
    int pid, pause, locals = 0;
    if (!PyArg_ParseTuple(args, "ip|p:dump", &pid, &pause, &locals)) return NULL;
    int flags = (pause ? HL_DUMP_PAUSE : 0) | (locals ? HL_DUMP_LOCALS : 0);
    hl_dump dump;
    Py_BEGIN_ALLOW_THREADS
    hl_engine_dump(pid, flags, &dump);
    Py_END_ALLOW_THREADS
    PyObject *result = hl_convert_dump(&dump);
    hl_engine_dump_free(&dump);
    return result;
}

/* ---- heatline top's reader ------------------------------------------------------------------ */

#define READER_CAPSULE "heatline._native.reader"

static void reader_destroy(PyObject *capsule) {
    hl_engine_remote_close(PyCapsule_GetPointer(capsule, READER_CAPSULE));
}

PyDoc_STRVAR(remote_open_doc,
             "remote_open($module, pid, opcode_flags, /)\n--\n\n"
             "A reader of process pid (its interpreter found once), and the status dict\n"
             "(dump()'s fields; the reader is None when error is set). opcode_flags: 256 bytes\n"
             "for the target's opcodes, or None. See docs/engine-api.md.");

static PyObject *native_remote_open(PyObject *module, PyObject *args) {
    (void)module;
    int pid;
    PyObject *flags_object;
    if (!PyArg_ParseTuple(args, "iO:remote_open", &pid, &flags_object)) return NULL;
    uint8_t flags[256];
    int have_flags = flags_object != Py_None;
    if (have_flags) {
        if (!PyBytes_Check(flags_object) || PyBytes_GET_SIZE(flags_object) != 256) {
            PyErr_SetString(PyExc_ValueError, "opcode_flags must be 256 bytes or None");
            return NULL;
        }
        memcpy(flags, PyBytes_AS_STRING(flags_object), 256);
    }
    hl_dump status;
    hl_remote *reader;
    Py_BEGIN_ALLOW_THREADS
    reader = hl_engine_remote_open(pid, have_flags ? flags : NULL, &status);
    Py_END_ALLOW_THREADS
    PyObject *converted = hl_convert_dump(&status);
    hl_engine_dump_free(&status);
    if (converted == NULL) {
        hl_engine_remote_close(reader);
        return NULL;
    }
    if (reader == NULL) return Py_BuildValue("(ON)", Py_None, converted);
    PyObject *capsule = PyCapsule_New(reader, READER_CAPSULE, reader_destroy);
    if (capsule == NULL) {
        hl_engine_remote_close(reader);
        Py_DECREF(converted);
        return NULL;
    }
    return Py_BuildValue("(NN)", capsule, converted);
}

PyDoc_STRVAR(remote_sample_doc,
             "remote_sample($module, reader, /)\n--\n\n"
             "One reading of the reader's process, without stopping it. Not to be called from\n"
             "two threads at once on one reader. See docs/engine-api.md.");

static PyObject *native_remote_sample(PyObject *module, PyObject *capsule) {
    (void)module;
    hl_remote *reader = PyCapsule_GetPointer(capsule, READER_CAPSULE);
    if (reader == NULL) return NULL;
    hl_dump sample;
    Py_BEGIN_ALLOW_THREADS
    hl_engine_remote_sample(reader, &sample);
    Py_END_ALLOW_THREADS
    PyObject *result = hl_convert_remote_sample(&sample);
    hl_engine_dump_free(&sample);
    return result;
}

PyDoc_STRVAR(remote_functions_doc,
             "remote_functions($module, reader, first, /)\n--\n\n"
             "The reader's functions from id first on: (file, name, qualname, first_line).");

static PyObject *native_remote_functions(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *capsule;
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "On:remote_functions", &capsule, &first)) return NULL;
    hl_remote *reader = PyCapsule_GetPointer(capsule, READER_CAPSULE);
    if (reader == NULL) return NULL;
    return hl_convert_remote_functions(hl_engine_remote_names(reader),
                                       first > 0 ? (size_t)first : 0);
}

/* ---- heatline attach ---------------------------------------------------------------------- */

PyDoc_STRVAR(inject_doc,
             "inject($module, pid, library, function, argument, timeout_s, /)\n--\n\n"
             "Load library into process pid (unless it is mapped there) and call its\n"
             "int function(const char *argument) on a borrowed thread. See docs/engine-api.md.");

static PyObject *native_inject(PyObject *module, PyObject *args) {
    (void)module;
    int pid;
    const char *library, *function, *argument;
    double timeout_s;
    if (!PyArg_ParseTuple(args, "isssd:inject", &pid, &library, &function, &argument, &timeout_s))
        return NULL;
    hl_inject_result result;
    Py_BEGIN_ALLOW_THREADS
    hl_engine_inject(pid, library, function, argument, (uint64_t)(timeout_s * 1e9), &result);
    Py_END_ALLOW_THREADS
    return hl_convert_inject(&result);
}

PyDoc_STRVAR(switch_interval_doc,
             "switch_interval($module, pid, set_us, expect_us, /)\n--\n\n"
             "Process pid's GIL switch interval in microseconds, read from outside it; then\n"
             "set to set_us (when > 0) if it still is expect_us (when > 0). None when it\n"
             "cannot be read or written (remote.h, hl_remote_switch_interval).");

static PyObject *native_switch_interval(PyObject *module, PyObject *args) {
    (void)module;
    int pid;
    unsigned long set_us, expect_us, previous = 0;
    if (!PyArg_ParseTuple(args, "ikk:switch_interval", &pid, &set_us, &expect_us)) return NULL;
    int result;
    Py_BEGIN_ALLOW_THREADS
    result = hl_engine_remote_switch_interval(pid, set_us, expect_us, &previous);
    Py_END_ALLOW_THREADS
    if (result != 0) Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(previous);
}

/* ---- test hooks -------------------------------------------------------------------------- */

PyDoc_STRVAR(remote_layout_check_doc,
             "_remote_layout_check($module, /)\n--\n\n"
             "Test hook: None when heatline dump's table for this CPython version holds the\n"
             "offsets of its headers, else the name of the first field that differs.");

static PyObject *native_remote_layout_check(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    const char *field = NULL;
    if (hl_engine_remote_layout_check(&field)) Py_RETURN_NONE;
    return PyUnicode_FromString(field);
}

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

PyDoc_STRVAR(read_pieces_doc,
             "_read_pieces($module, pid, pieces, /)\n--\n\n"
             "Test hook: reads [(address, length), ...] of process pid's memory in one batch, as\n"
             "the sampler reads ahead: a list of bytes, None for each piece not read whole.");

static PyObject *native_read_pieces(PyObject *module, PyObject *args) {
    (void)module;
    int pid;
    PyObject *pieces;
    if (!PyArg_ParseTuple(args, "iO!:_read_pieces", &pid, &PyList_Type, &pieces)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(pieces);
    if (n > HL_ENGINE_READ_PIECES_MAX) {
        PyErr_Format(PyExc_ValueError, "_read_pieces: at most %d pieces",
                     HL_ENGINE_READ_PIECES_MAX);
        return NULL;
    }
    uintptr_t addresses[HL_ENGINE_READ_PIECES_MAX];
    size_t lengths[HL_ENGINE_READ_PIECES_MAX];
    uint8_t *out[HL_ENGINE_READ_PIECES_MAX];
    uint8_t ok[HL_ENGINE_READ_PIECES_MAX];
    PyObject *result = PyList_New(n);
    if (result == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long address;
        Py_ssize_t length;
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        PyObject *buffer;
        if (!PyArg_ParseTuple(piece, "Kn:_read_pieces", &address, &length) || length <= 0 ||
            (buffer = PyBytes_FromStringAndSize(NULL, length)) == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a piece's length is > 0");
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, i, buffer);
        addresses[i] = (uintptr_t)address;
        lengths[i] = (size_t)length;
        out[i] = (uint8_t *)PyBytes_AS_STRING(buffer);
    }
    hl_engine_read_pieces(pid, (size_t)n, addresses, lengths, out, ok);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!ok[i]) {
            Py_INCREF(Py_None);
            PyList_SetItem(result, i, Py_None); /* drops the unread buffer */
        }
    }
    return result;
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
    int depth = hl_engine_walk_locked((uintptr_t)PyThreadState_Get(), frames, HL_MAX_DEPTH);
    if (depth == -EBUSY) {
        hl_engine_snapshot_end();
        PyErr_SetString(PyExc_RuntimeError, "_current_stack cannot run while profiling");
        return NULL;
    }
    PyObject *list = depth < 0 ? NULL : hl_convert_stack_locked(&view, frames, depth);
    hl_engine_snapshot_end();
    if (depth < 0) PyErr_SetString(PyExc_RuntimeError, "the stack could not be read");
    return list;
}

PyDoc_STRVAR(compile_program_doc,
             "_compile_program($module, source, filename, /)\n--\n\n"
             "The code of a program's source (bytes, no NUL byte) as compile(source, filename, "
             "'exec', dont_inherit=True) gives it, without compile()'s test of whether source is "
             "an AST, which builds the ast module's hundred-odd classes in a process that never "
             "uses them (python runs a script without them).");

static PyObject *native_compile_program(PyObject *module, PyObject *args) {
    (void)module;
    const char *source;
    Py_ssize_t size;
    PyObject *filename;
    if (!PyArg_ParseTuple(args, "y#U:_compile_program", &source, &size, &filename)) return NULL;
    if (memchr(source, '\0', (size_t)size) != NULL) {
        PyErr_SetString(PyExc_ValueError, "_compile_program: the source has a NUL byte");
        return NULL;
    }
    /* What compile() passes for bytes and dont_inherit=True: no flags of the caller's, the
     * source's own coding declaration honoured, the interpreter's -O level. */
    PyCompilerFlags flags = {.cf_flags = PyCF_SOURCE_IS_UTF8,
                             .cf_feature_version = PY_MINOR_VERSION};
    return Py_CompileStringObject(source, filename, Py_file_input, &flags, -1);
}

PyDoc_STRVAR(run_on_fresh_stack_doc,
             "_run_on_fresh_stack($module, main, /, *arguments)\n--\n\n"
             "Runs the program as python runs its main module, with no Python frame below the "
             "program's own and the whole recursion limit to use (the caller's frames are set "
             "aside meanwhile): `main` a code object is evaluated with arguments[0] as its "
             "globals and locals (python running a script); anything else is called with "
             "`arguments` (runpy's _run_module_as_main). Returns what that returns.");

typedef struct fresh_run {
    PyObject *main;
    PyObject *const *arguments;
    Py_ssize_t count;
} fresh_run;

static void *run_fresh(void *context) {
    const fresh_run *run = context;
    if (PyCode_Check(run->main))
        return PyEval_EvalCode(run->main, run->arguments[0], run->arguments[0]);
    return PyObject_Vectorcall(run->main, run->arguments, (size_t)run->count, NULL);
}

static PyObject *native_run_on_fresh_stack(PyObject *module, PyObject *const *args,
                                           Py_ssize_t nargs) {
    (void)module;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "_run_on_fresh_stack(main, *arguments)");
        return NULL;
    }
    fresh_run run = {args[0], args + 1, nargs - 1};
    if (PyCode_Check(run.main) && (run.count != 1 || !PyDict_Check(run.arguments[0]))) {
        PyErr_SetString(PyExc_TypeError, "_run_on_fresh_stack(code, globals): a dict of globals");
        return NULL;
    }
    return hl_engine_on_fresh_stack(run_fresh, &run);
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
    Py_BEGIN_ALLOW_THREADS
    hl_engine_hold_lock((uint64_t)(seconds * 1e9));
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
    {"_on_new_threads", native_on_new_threads, METH_O, on_new_threads_doc},
    {"_watch_detach", native_watch_detach, METH_VARARGS, watch_detach_doc},
    {"_suspend_for_fork", native_suspend_for_fork, METH_NOARGS, suspend_doc},
    {"_chain_sigterm", native_chain_sigterm, METH_NOARGS, chain_sigterm_doc},
    {"_sigterm_delivered", native_sigterm_delivered, METH_NOARGS, sigterm_delivered_doc},
    {"_record_exit_status", native_record_exit_status, METH_O, record_exit_status_doc},
    {"_check_signals", native_check_signals, METH_NOARGS, check_signals_doc},
    {"_environ", native_environ, METH_NOARGS, environ_doc},
    {"_resume_after_fork", native_resume_after_fork, METH_NOARGS, resume_after_fork_doc},
    {"_release_after_fork", native_release_after_fork, METH_NOARGS, release_after_fork_doc},
    {"snapshot", native_snapshot, METH_NOARGS, snapshot_doc},
    {"label_push", native_label_push, METH_O, label_push_doc},
    {"label_pop", native_label_pop, METH_O, label_pop_doc},
    {"label_current", native_label_current, METH_NOARGS, label_current_doc},
    {"module_hooks", native_module_hooks, METH_O, module_hooks_doc},
    {"module_pre_hook", (PyCFunction)(void (*)(void))native_module_pre_hook, METH_FASTCALL,
     module_pre_hook_doc},
    {"module_post_hook", (PyCFunction)(void (*)(void))native_module_post_hook, METH_FASTCALL,
     module_post_hook_doc},
    {"labels", native_labels, METH_NOARGS, labels_doc},
    {"dump", native_dump, METH_VARARGS, dump_doc},
    {"remote_open", native_remote_open, METH_VARARGS, remote_open_doc},
    {"remote_sample", native_remote_sample, METH_O, remote_sample_doc},
    {"remote_functions", native_remote_functions, METH_VARARGS, remote_functions_doc},
    {"inject", native_inject, METH_VARARGS, inject_doc},
    {"switch_interval", native_switch_interval, METH_VARARGS, switch_interval_doc},
    {"_remote_layout_check", native_remote_layout_check, METH_NOARGS, remote_layout_check_doc},
    {"_read_pieces", native_read_pieces, METH_VARARGS, read_pieces_doc},
    {"_line_of", (PyCFunction)(void (*)(void))native_line_of, METH_FASTCALL, line_of_doc},
    {"_current_stack", native_current_stack, METH_NOARGS, current_stack_doc},
    {"_hold_engine_lock", native_hold_engine_lock, METH_O, hold_lock_doc},
    {"_compile_program", native_compile_program, METH_VARARGS, compile_program_doc},
    {"_run_on_fresh_stack", (PyCFunction)(void (*)(void))native_run_on_fresh_stack, METH_FASTCALL,
     run_on_fresh_stack_doc},
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
