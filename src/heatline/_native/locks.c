/* locks.c: see locks.h. */
#include "locks.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array.h"
#include "memread.h"
#include "unaligned.h"

#define MAX_SLOTS 1024        /* slots read per frame: hl_memread_batch's most pieces */
#define FRAME_HEADER_BYTES 512 /* >= every layout's frame fields and f_localsplus */
#define MAX_REFCOUNT                                                                               \
    ((uintptr_t)1 << 40) /* above: a pointer, not a count (3.12+'s immortal
                                           * objects count 2^32 - 1) */

enum { TYPE_OTHER = 0, TYPE_LOCK = HL_LOCK_PLAIN, TYPE_RLOCK = HL_LOCK_RLOCK, TYPE_CFUNCTION };

static int read_word(int pid, uintptr_t address, uintptr_t *value) {
    return hl_memread_remote(pid, value, address, sizeof(*value));
}

/* What the type at address is, by its tp_name (remembered per type). */
static int type_of(int pid, const hl_remote_layout *r, hl_lock_types *types, uintptr_t type) {
    for (int i = 0; i < types->count; i++)
        if (types->address[i] == type) return types->what[i];
    uintptr_t name_at = 0;
    char name[32];
    int what = TYPE_OTHER;
    if (read_word(pid, type + r->objects.type_name, &name_at) == 0 &&
        hl_memread_remote(pid, name, name_at, sizeof(name)) == 0) {
        name[sizeof(name) - 1] = '\0';
        if (strcmp(name, "_thread.lock") == 0) what = TYPE_LOCK;
        else if (strcmp(name, "_thread.RLock") == 0) what = TYPE_RLOCK;
        else if (strcmp(name, "builtin_function_or_method") == 0) what = TYPE_CFUNCTION;
    }
    if (types->count < HL_LOCK_TYPES) {
        types->address[types->count] = type;
        types->what[types->count++] = (uint8_t)what;
    }
    return what;
}

/* Whether an object's header (its reference count, then its type: every version that has a
 * lock layout) is a live object's: a slot above a value stack's live top may point to an object
 * freed since, whose first word the allocator has taken for its free list (a pointer, or 0). */
static int alive(const uintptr_t header[2]) {
    return header[0] > 0 && header[0] < MAX_REFCOUNT && header[1] != 0;
}

/* The type of the object at address, or TYPE_OTHER when unreadable or not alive. */
static int object_type(int pid, const hl_remote_layout *r, hl_lock_types *types, uintptr_t object) {
    uintptr_t header[2];
    if (object == 0 || r->walk.object_type != 8 ||
        hl_memread_remote(pid, header, object, sizeof(header)) != 0 || !alive(header))
        return TYPE_OTHER;
    return type_of(pid, r, types, header[1]);
}

/* Fills a ref from the lock object at address (of kind TYPE_LOCK or TYPE_RLOCK). */
static int read_lock(int pid, const hl_remote_layout *r, uintptr_t address, int kind,
                     hl_lock_ref *ref) {
    uint8_t bytes[64];
    size_t size = kind == TYPE_LOCK ? r->lock_locked + 1 : r->rlock_count + 8;
    if (size > sizeof(bytes) || hl_memread_remote(pid, bytes, address, size) != 0) return -1;
    memset(ref, 0, sizeof(*ref));
    ref->lock = address;
    ref->kind = kind;
    if (kind == TYPE_LOCK) {
        ref->sem = hl_load_word(bytes, r->lock_sem);
        ref->locked = bytes[r->lock_locked] != 0;
    } else {
        ref->sem = hl_load_word(bytes, r->rlock_sem);
        ref->owner = hl_load_u64(bytes, r->rlock_owner);
        ref->count = hl_load_u64(bytes, r->rlock_count);
        ref->locked = ref->count > 0;
    }
    return 0;
}

/* Whether the builtin method at address is named __exit__ (its PyMethodDef's ml_name). */
static int named_exit(int pid, uintptr_t method_def) {
    uintptr_t name_at = 0;
    char name[9];
    if (read_word(pid, method_def, &name_at) != 0 ||
        hl_memread_remote(pid, name, name_at, sizeof(name)) != 0)
        return 0;
    return memcmp(name, "__exit__", 9) == 0;
}

static int add_ref(const hl_lock_ref *ref, hl_lock_ref **refs, size_t *count, size_t *capacity) {
    if (HL_ARRAY_RESERVE(*refs, *capacity, *count + 1, 8) != 0) return -1;
    (*refs)[(*count)++] = *ref;
    return 0;
}

/* The slots of the frame at address: where they start, how many of them are locals (the rest is
 * the value stack) and how many to read. Returns 0, or -1 for a frame it cannot read (changed
 * since the walker read it). */
static int frame_slots(int pid, const hl_remote_layout *r, uintptr_t frame, uintptr_t *start,
                       size_t *nlocals, size_t *nslots) {
    const hl_layout *l = &r->walk;
    uint8_t header[FRAME_HEADER_BYTES];
    size_t size = l->frame_read_size;
    if (r->frame_stacktop + 4 > size) size = r->frame_stacktop + 4;
    if (r->frame_valuestack + 8 > size) size = r->frame_valuestack + 8;
    if (size > sizeof(header) || hl_memread_remote(pid, header, frame, size) != 0) return -1;
    uintptr_t code = hl_load_word(header, l->frame_code) & ~l->code_tag_bits, type = 0;
    int ints[2];
    if (code == 0 || read_word(pid, code + l->object_type, &type) != 0 || type != l->code_type)
        return -1; /* not a code object's frame (any more) */
    if (hl_memread_remote(pid, &ints[0], code + r->code_stacksize, sizeof(int)) != 0) return -1;
    size_t stacksize = ints[0] > 0 ? (size_t)ints[0] : 0;
    *start = frame + r->objects.frame_localsplus;
    if (l->frame_model == HL_FRAMES_OBJECTS) {
        uintptr_t valuestack = hl_load_word(header, r->frame_valuestack);
        if (valuestack < *start || (valuestack - *start) / 8 > MAX_SLOTS) return -1;
        *nlocals = (valuestack - *start) / 8;
        *nslots = *nlocals + stacksize;
    } else {
        if (hl_memread_remote(pid, &ints[1], code + r->code_nlocalsplus, sizeof(int)) != 0 ||
            ints[1] < 0)
            return -1;
        *nlocals = (size_t)ints[1];
        *nslots = *nlocals + stacksize;
        int top = r->frame_stacktop ? hl_load_int(header, r->frame_stacktop) : -1;
        if (top >= (int)*nlocals && (size_t)top <= *nslots) *nslots = (size_t)top;
    }
    if (*nslots > MAX_SLOTS) *nslots = MAX_SLOTS;
    return 0;
}

/* One frame's slots as read, and the reads of their objects' types. */
typedef struct scratch {
    uintptr_t slots[MAX_SLOTS], headers[MAX_SLOTS][2]; /* headers: reference count, type */
    struct iovec local[MAX_SLOTS], remote[MAX_SLOTS];
    uint8_t ok[MAX_SLOTS];
} scratch;

/* The locks among one frame's slots. */
static int read_frame(int pid, const hl_remote_layout *r, hl_lock_types *types, scratch *s,
                      int index, uintptr_t start, size_t nlocals, size_t nslots, hl_lock_ref **refs,
                      size_t *count, size_t *capacity) {
    uintptr_t *slots = s->slots;
    struct iovec *local = s->local, *remote = s->remote;
    uint8_t *ok = s->ok;
    if (nslots == 0 || r->walk.object_type != 8 ||
        hl_memread_remote(pid, slots, start, nslots * 8) != 0)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < nslots; i++) {
        slots[i] &= ~r->walk.code_tag_bits;
        if (slots[i] < 4096) continue; /* NULL, or a tagged small value */
        local[n].iov_base = s->headers[i];
        local[n].iov_len = sizeof(s->headers[i]);
        remote[n].iov_base = (void *)slots[i];
        remote[n].iov_len = sizeof(s->headers[i]);
        n++;
    }
    hl_memread_batch(pid, local, remote, n, ok);
    for (size_t k = 0; k < n; k++) {
        size_t i = (size_t)((uintptr_t (*)[2])local[k].iov_base - s->headers);
        if (!ok[k] || !alive(s->headers[i])) continue;
        int what = type_of(pid, r, types, s->headers[i][1]);
        uintptr_t lock = slots[i];
        int place = i < nlocals ? HL_LOCK_LOCAL : HL_LOCK_STACK;
        if (what == TYPE_CFUNCTION) {
            uintptr_t method[2]; /* m_ml, m_self */
            if (hl_memread_remote(pid, method, lock + r->cfunction_method, sizeof(method)) != 0 ||
                r->cfunction_self != r->cfunction_method + 8)
                continue;
            lock = method[1];
            what = object_type(pid, r, types, lock);
            if (what != TYPE_LOCK && what != TYPE_RLOCK) continue;
            if (place == HL_LOCK_STACK && named_exit(pid, method[0])) place = HL_LOCK_EXIT;
        }
        if (what != TYPE_LOCK && what != TYPE_RLOCK) continue;
        hl_lock_ref ref;
        if (read_lock(pid, r, lock, what, &ref) != 0) continue;
        ref.frame = index;
        ref.place = place;
        ref.slot = (int)i;
        if (add_ref(&ref, refs, count, capacity) != 0) return -1;
    }
    return 0;
}

int hl_locks_read(int pid, const hl_remote_layout *r, hl_lock_types *types, const uintptr_t *frames,
                  int depth, hl_lock_ref **refs, size_t *count, size_t *capacity) {
    if (!r->lock_layout || depth <= 0) return 0;
    scratch *s = malloc(sizeof(*s));
    if (s == NULL) return -1;
    int result = 0;
    for (int index = 0; index < depth && result == 0; index++) {
        uintptr_t start = 0;
        size_t nlocals = 0, nslots = 0;
        if (frame_slots(pid, r, frames[index], &start, &nlocals, &nslots) == 0)
            result =
                read_frame(pid, r, types, s, index, start, nlocals, nslots, refs, count, capacity);
    }
    free(s);
    return result;
}
