"""Memory ground truth for native allocations that C extensions make through CPython's raw
allocator (see _memtruth.py).

The lzma module hands liblzma an allocator that calls PyMem_RawMalloc (_lzmamodule.c,
PyLzma_Malloc), so a decoder's dictionary is malloc'ed by libpython on behalf of C code: native
memory by any reading of "malloc-family allocations made by C code", that neither numpy-style
GOT hooks on the extension (it calls PyMem_RawMalloc, not malloc) nor the MEM/OBJ domain hooks
(it is the RAW domain) see by themselves. zlib and bz2 do the same with smaller buffers.

A raw LZMA2 decoder (LZMADecompressor(format=FORMAT_RAW, filters=...)) with a dictionary of D
bytes allocates, when it is constructed, the dictionary (D bytes, plus 2 * 288 bytes of repeat
margin in liblzma 5.4) and about 33 KB of decoder state; all of it lives until the decompressor
object is freed. No data needs to be compressed (an encoder with a big dictionary would
allocate ten times more). The truth counts D per decoder; the rest (under 64 KiB per decoder)
is within the line's slack, and test_memory_truth.py checks it against tracemalloc, which
traces the RAW domain.

- kept_once: one decoder with a 64 MiB dictionary, alive for the whole run;
- leak: every round, a decoder with a 4 MiB dictionary appended to a module-level list (the
  rounds are spaced by a pause, so that it grows over the whole run);
- transient: every round, a decoder with a 16 MiB dictionary, freed when its phase returns.

The peak is reached in the last round (the leak is largest then) at the transient line.
"""

import _memtruth  # noqa: I001 (first: in tracemalloc mode, it starts tracemalloc)

import lzma
import time

TRUTH = _memtruth.Truth(__file__)
SCALE = TRUTH.scale

ROUNDS = 12
MIB = 1 << 20
# LZMA2 dictionary sizes are 2**n or 2**n + 2**(n-1) bytes: scale by powers of two.
SHIFT = 0 if SCALE >= 1 else 1 if SCALE >= 0.5 else 2
KEPT_DICT = (64 * MIB) >> SHIFT
LEAK_DICT = (4 * MIB) >> SHIFT
SCRATCH_DICT = (16 * MIB) >> SHIFT

DECODER_STATE = 64 * 1024  # at most, beyond the dictionary (about 33 KB)
PAUSE_S = 0.02  # other work between rounds (waiting), so that the leak grows over time

KEPT = None
LEAKED = []


Decoder, RAW = lzma.LZMADecompressor, lzma.FORMAT_RAW


def lzma2(dict_size):
    return [{"id": lzma.FILTER_LZMA2, "dict_size": dict_size}]


@TRUTH.phase
def kept_once():
    global KEPT
    KEPT = Decoder(format=RAW, filters=lzma2(KEPT_DICT))  # mem: lzma_kept (kept_once)
    TRUTH.line("lzma_kept", native=KEPT_DICT, slack=DECODER_STATE)


@TRUTH.phase
def leak_step():
    LEAKED.append(Decoder(format=RAW, filters=lzma2(LEAK_DICT)))  # mem: lzma_leak (leak)
    TRUTH.line("lzma_leak", native=LEAK_DICT, slack=DECODER_STATE)


@TRUTH.phase
def scratch():
    decoder = Decoder(format=RAW, filters=lzma2(SCRATCH_DICT))  # mem: lzma_scratch (transient)
    TRUTH.line("lzma_scratch", native=SCRATCH_DICT, slack=DECODER_STATE)
    TRUTH.note_peak(SCRATCH_DICT)
    return decoder.eof


def other_work():
    time.sleep(PAUSE_S)


def main():
    kept_once()
    for _ in range(ROUNDS):
        leak_step()
        other_work()
        scratch()


if __name__ == "__main__":
    main()
