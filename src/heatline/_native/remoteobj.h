/* remoteobj.h: another process's Python objects, read from outside it (heatline dump, top).
 *
 * Like remote.h, nothing runs in the target: every object is read with process_vm_readv
 * (memread.h), through the offsets compat.h's hl_remote_layout gives for the target's version,
 * and every address read is checked before it is followed (its type, a size within bounds), so
 * an object freed or changed while it is read yields "unreadable", never a crash nor a wrong
 * type. Only the exact built-in types are decoded (int, float, str, bytes, None, True, False;
 * list, tuple, dict, set and frozenset by their length); an instance of any other type, a
 * subclass of those included, is named by its type only: its own __repr__ is Python code, which
 * a reader from outside cannot run.
 */
#ifndef HEATLINE_REMOTEOBJ_H
#define HEATLINE_REMOTEOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "compat.h"

/* The target's addresses of the built-in types and singletons a repr tells apart (0: not
 * found, such objects are then named by their type). */
typedef struct hl_remote_types {
    uintptr_t none, true_object, false_object;
    uintptr_t int_type, bool_type, float_type, str_type, bytes_type;
    uintptr_t list_type, tuple_type, dict_type, set_type, frozenset_type, cell_type;
} hl_remote_types;

/* What reading objects of process pid needs: its layout and its types. */
typedef struct hl_remote_objects {
    int pid;
    const hl_remote_layout *layout;
    hl_remote_types types;
} hl_remote_objects;

#define HL_REMOTE_NAME_MAX 64  /* a thread's or a variable's name, NUL included */
#define HL_REMOTE_REPR_MAX 128 /* a value's short repr, NUL included */

/* The name of the object's type (its tp_name, non-printable bytes as '?') into out.
 * Returns 0, or -1 (out then empty) when it cannot be read. */
int hl_remote_type_name(const hl_remote_objects *o, uintptr_t object, char *out, size_t size);

/* A str's text, UTF-8, cut at a character boundary to fit out. Returns 0, 1 when it was cut,
 * or -1 (out then empty) when the object is not a compact str or cannot be read. */
int hl_remote_str(const hl_remote_objects *o, uintptr_t object, char *out, size_t size);

/* An int's value, when it is an int within int64_t. Returns 0 or -1. */
int hl_remote_int(const hl_remote_objects *o, uintptr_t object, int64_t *value);

/* A short repr of the object, always NUL-terminated: Python's own for None, True, False, an
 * int (up to about 70 digits), a float, a str or bytes (their first 40 characters, then
 * "..."); "<list of 3>" for a list, tuple, dict, set or frozenset; "<T object>" for any other
 * (T its type's name); "<unreadable>" when it cannot be read. */
void hl_remote_repr(const hl_remote_objects *o, uintptr_t object, char *out, size_t size);

/* Calls visit for each item of a dict (stopping when it returns non-zero). Returns 0, or -1
 * when the object is not a dict or cannot be read whole. */
typedef int (*hl_remote_item_visit)(const hl_remote_objects *o, uintptr_t key, uintptr_t value,
                                    void *context);
int hl_remote_dict_items(const hl_remote_objects *o, uintptr_t dict, hl_remote_item_visit visit,
                         void *context);
/* The value a dict holds under the str key: its address, or 0 (absent, unreadable). */
uintptr_t hl_remote_dict_get(const hl_remote_objects *o, uintptr_t dict, const char *key);
/* The value of an attribute kept in an object's instance dict (whichever form the version keeps
 * it in: a dict, or values beside the object sharing its class's keys): its address, or 0
 * (none, a class attribute or a slot, unreadable). */
uintptr_t hl_remote_attribute(const hl_remote_objects *o, uintptr_t object, const char *name);

/* The threading module's _active dict (thread ident -> Thread) of the interpreter whose
 * PyInterpreterState is at interp, found through its sys.modules: its address, or 0 (threading
 * not imported, or unreadable). It lives as long as the interpreter: a reader may keep it. */
uintptr_t hl_remote_threading_active(const hl_remote_objects *o, uintptr_t interp);
/* The names the threading module gave the threads listed in active (its _active dict):
 * visit(ident, name, context) for each Thread (ident: what threading.get_ident() returned in
 * it), name its _name. Returns how many, or -1 (not a dict, unreadable). */
int hl_remote_thread_names(const hl_remote_objects *o, uintptr_t active,
                           void (*visit)(uint64_t ident, const char *name, void *context),
                           void *context);

/* One local variable of a frame: its name and its value's short repr. */
typedef struct hl_remote_local {
    int frame; /* the index of its frame in its thread's stack (set by the caller) */
    char name[HL_REMOTE_NAME_MAX];
    char repr[HL_REMOTE_REPR_MAX];
} hl_remote_local;

/* Appends the bound local variables of the frame at address frame (as frames.h's walker reads
 * frames: a PyFrameObject on 3.9 and 3.10, an _PyInterpreterFrame from 3.11), in the code
 * object's order (arguments first), cells and free variables by the value they hold, to
 * (*locals)[*count...], growing the array (HL_ARRAY_RESERVE). Returns how many were appended,
 * or -1 (the frame or its code object unreadable; out of memory). */
int hl_remote_frame_locals(const hl_remote_objects *o, uintptr_t frame, hl_remote_local **locals,
                           size_t *count, size_t *capacity);

#endif
