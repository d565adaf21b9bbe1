"""Ground truth for memory profiling: known allocations on known lines (see _memtruth.py).

The run: kept_once() allocates buffers kept until the end; then ROUNDS rounds each leak a
little more (leak_step) and do one of four kinds of work in turn (python_objects,
native_temporary, copies, thread_work); halfway through, spike() allocates the program's
peak and frees it.

Why each line's numbers are exact, on CPython 3.11 and numpy 2.x (checked by
tests/integration/test_memory_truth.py: against tracemalloc per line, and against an
LD_PRELOAD probe of memcpy/memmove for copies):

- np.ones(n), np.zeros(n), arr.copy(), np.array(arr), np.array(list_of_floats): the data
  buffer is ONE malloc/calloc of exactly 8n bytes by numpy's default allocator (native). The
  ndarray object itself (~100 bytes, PyObject_Malloc) is Python but negligible, and ignored.
  np.zeros calls calloc with the GIL released (numpy's default_calloc wraps it in
  NPY_BEGIN_THREADS): zero_worker's line is a native allocation made without the GIL, by a
  thread other than the main one. (np.zeros also leaves the pages untouched, which keeps the
  big ones, HELD and the spike, cheap to run.)
- arr.tolist() of n float64: one list (sys.getsizeof([]) = 56 bytes, GC header included) whose
  item array is allocated at once by PyList_New(n) (8n bytes, PyMem), and n new float objects
  of sys.getsizeof(1.0) = 24 bytes (PyObject_Malloc). No temporaries: numpy's getitem reads the
  double in place (aligned array) and calls PyFloat_FromDouble. (The float free list can hand
  back up to 100 recycled floats: at most 2.4 KB less, ignored.)
- RECORDS[a:b].tolist() (dtype S400, records of 400 bytes with no trailing NUL): one list as
  above, and per record one bytes object of sys.getsizeof(b"") + 400 = 433 bytes
  (PyObject_Malloc; over 512 bytes it would still be one PyObject_Malloc call, served by
  malloc inside CPython's allocator, which must not count twice).
- bytes(bytearray_of_N), arr.tobytes(): one bytes object of sys.getsizeof(b"") + N bytes.
- bytearray(N): the object (sys.getsizeof(bytearray()) = 56) and a buffer of N + 1 bytes
  (PyObject_Malloc).

Copies (bytes passed to memcpy/memmove by libpython and numpy; measured with the probe):

- bytes(bytearray_of_N): N. _PyBytes_FromBuffer -> PyBuffer_ToContiguous, one memcpy of N.
- arr.tobytes(): 8n. One memcpy into the new bytes object.
- arr.copy(), np.array(arr): 8n. numpy's contiguous copy loop (_contig_to_contig) is one
  memmove of the whole buffer, run with the GIL released.
- RECORDS[a:b].tolist(): 400 per record. Each bytes object is made by
  PyBytes_FromStringAndSize(record, 400), which memcpys the record: many small copies.
- arr.tolist() of float64 and np.array(list_of_floats): 0. Element by element conversions
  (PyFloat_FromDouble / PyFloat_AsDouble and a store), no memcpy/memmove at all: a list <->
  array conversion of floats is not a copy at the C level.
- np.ones, np.zeros, bytearray(N): 0 (a fill, a calloc, a memset).

Leaks: leak_step() appends to two module-level lists every round, from the first round to
the last, interleaved with all the other work: their lines grow steadily over the whole run
(the lists' own pointer arrays, a few hundred bytes, are ignored). kept_once() runs once at the
start and its buffers live until exit: not leaks. Every other tagged line is freed by the end
of its phase: not leaks.

The peak is reached on the spike line (SPIKE_N floats, far more than anything else that is
ever transient), while kept_once's buffers and half of the leaks are alive. The spike's array
lives only while its own line runs, so every allocation made while the peak is reached belongs
to that line: the peak's line is unambiguous. Its exact value comes from a tracemalloc run
(HEATLINE_TRUTH_MODE=tracemalloc): by construction it is 630.6 MB plus what the imports keep
(about 6.6 MB of Python objects, numpy's mostly).

At scale 1 (numbers from the truth, test_memory_truth.py checks them):

  line         kind       Python MB  native MB  copied MB  alive at end MB
  held         kept_once      -        120.0        -          120.0
  source       kept_once      -         16.0        -           16.0
  records      kept_once      -         48.0        -           48.0
  buffer       kept_once     32.0        -          -           32.0
  kept_blobs   kept_once     52.9        -         48.0         52.9
  leak_arrays  leak           -         24.0        -           24.0
  leak_records leak          52.9        -         48.0         52.9
  floats       transient     76.8        -          0            0
  scratch      transient      -        384.0        -            0
  blob         transient    192.0        -        192.0          0
  raw          transient     96.0        -         96.0          0
  dup          transient      -         96.0       96.0          0
  again        transient      -         96.0       96.0          0
  as_list      transient     48.0        -          0            0
  back         transient      -         12.0        0            0
  grid         transient      -        192.0        -            0  (worker thread, no GIL)
  spike        spike          -        320.0        -            0
"""

import _memtruth  # noqa: I001 (first: in tracemalloc mode, it starts tracemalloc)

import sys
import threading

import numpy as np

TRUTH = _memtruth.Truth(__file__)
SCALE = TRUTH.scale


def scaled(count):
    return max(1, int(count * SCALE))


ROUNDS = 24
RECORD = 400  # bytes per record of RECORDS
RECORD_DTYPE = f"S{RECORD}"
HELD_N = scaled(15_000_000)  # floats kept for the whole run: 120 MB
SOURCE_N = scaled(2_000_000)  # floats: 16 MB, the input of the copies
RECORDS_N = scaled(120_000)  # records: 48 MB
BUFFER_N = scaled(32_000_000)  # bytearray: 32 MB
LEAK_ARRAY_N = scaled(125_000)  # floats leaked per round: 1 MB
LEAK_RECORDS_N = scaled(5_000)  # bytes objects leaked per round: 2.2 MB
FLOATS_N = scaled(400_000)  # Python floats per python_objects() call: 12.8 MB
SCRATCH_N = scaled(8_000_000)  # floats per native_temporary() call: 64 MB
CONVERT_N = scaled(250_000)  # list <-> array conversions per copies() call
GRID_N = scaled(4_000_000)  # floats calloc'ed by the worker thread: 32 MB
SPIKE_N = scaled(40_000_000)  # the peak: 320 MB

FLOAT = sys.getsizeof(1.0)  # what one float object allocates
BYTES_HEADER = sys.getsizeof(b"")  # a bytes object of k bytes allocates this + k
EMPTY_LIST = sys.getsizeof([])  # a list object, GC header included
EMPTY_BYTEARRAY = sys.getsizeof(bytearray())
POINTER = 8


def list_of(count, item_bytes):
    """Bytes allocated by a list of count new objects of item_bytes each, made by PyList_New."""
    return EMPTY_LIST + count * (POINTER + item_bytes)


HELD = SOURCE = RECORDS = BUFFER = KEPT_BLOBS = None
LEAKED_ARRAYS = []
LEAKED_RECORDS = []


@TRUTH.phase
def kept_once():
    global HELD, SOURCE, RECORDS, BUFFER, KEPT_BLOBS
    HELD = np.zeros(HELD_N)  # mem: held (kept_once)
    TRUTH.line("held", native=8 * HELD_N)
    SOURCE = np.ones(SOURCE_N)  # mem: source (kept_once)
    TRUTH.line("source", native=8 * SOURCE_N)
    RECORDS = np.ones(RECORDS_N * RECORD, np.uint8).view(RECORD_DTYPE)  # mem: records (kept_once)
    TRUTH.line("records", native=RECORDS_N * RECORD)
    BUFFER = bytearray(BUFFER_N)  # mem: buffer (kept_once)
    TRUTH.line("buffer", python=EMPTY_BYTEARRAY + BUFFER_N + 1)
    KEPT_BLOBS = RECORDS.tolist()  # mem: kept_blobs (kept_once)
    TRUTH.line(
        "kept_blobs", python=list_of(RECORDS_N, BYTES_HEADER + RECORD), copy=RECORDS_N * RECORD
    )


@TRUTH.phase
def leak_step():
    LEAKED_ARRAYS.append(np.ones(LEAK_ARRAY_N))  # mem: leak_arrays (leak)
    TRUTH.line("leak_arrays", native=8 * LEAK_ARRAY_N)
    LEAKED_RECORDS.append(RECORDS[:LEAK_RECORDS_N].tolist())  # mem: leak_records (leak)
    TRUTH.line(
        "leak_records",
        python=list_of(LEAK_RECORDS_N, BYTES_HEADER + RECORD),
        copy=LEAK_RECORDS_N * RECORD,
    )


@TRUTH.phase
def python_objects():
    floats = SOURCE[:FLOATS_N].tolist()  # mem: floats (transient)
    TRUTH.line("floats", python=list_of(FLOATS_N, FLOAT))
    return len(floats)


@TRUTH.phase
def native_temporary():
    scratch = np.ones(SCRATCH_N)  # mem: scratch (transient)
    TRUTH.line("scratch", native=8 * SCRATCH_N)
    scratch *= 2.0
    return float(scratch[-1])


@TRUTH.phase
def copies():
    blob = bytes(BUFFER)  # mem: blob (transient)
    TRUTH.line("blob", python=BYTES_HEADER + BUFFER_N, copy=BUFFER_N)
    raw = SOURCE.tobytes()  # mem: raw (transient)
    TRUTH.line("raw", python=BYTES_HEADER + 8 * SOURCE_N, copy=8 * SOURCE_N)
    dup = SOURCE.copy()  # mem: dup (transient)
    TRUTH.line("dup", native=8 * SOURCE_N, copy=8 * SOURCE_N)
    again = np.array(SOURCE)  # mem: again (transient)
    TRUTH.line("again", native=8 * SOURCE_N, copy=8 * SOURCE_N)
    as_list = SOURCE[:CONVERT_N].tolist()  # mem: as_list (transient)
    TRUTH.line("as_list", python=list_of(CONVERT_N, FLOAT), copy=0)
    back = np.array(as_list)  # mem: back (transient)
    TRUTH.line("back", native=8 * CONVERT_N, copy=0)
    return len(blob) + len(raw) + dup.size + again.size + back.size


@TRUTH.phase
def zero_worker(results):
    grid = np.zeros(GRID_N)  # mem: grid (transient)
    TRUTH.line("grid", native=8 * GRID_N)
    grid += 1.0  # runs without the GIL too
    results.append(grid.size)


def thread_work():
    results = []
    worker = threading.Thread(target=zero_worker, args=(results,))
    worker.start()
    worker.join()
    return results


@TRUTH.phase
def spike():
    # The array lives only while its own line runs (about 10 ms: summing reads every page), so
    # every allocation made while the peak is reached belongs to this line.
    started = TRUTH.now()
    total = float(np.zeros(SPIKE_N).sum())  # mem: spike (spike)
    TRUTH.line("spike", native=8 * SPIKE_N, started=started)
    TRUTH.note_peak(8 * SPIKE_N)
    return total


WORK = [python_objects, native_temporary, copies, thread_work]


def main():
    kept_once()
    for round_ in range(ROUNDS):
        leak_step()
        WORK[round_ % len(WORK)]()
        if round_ == ROUNDS // 2:
            spike()


if __name__ == "__main__":
    main()
