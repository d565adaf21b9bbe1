"""--malloc-threshold: one line allocates 10 MB, another 300 KB (both at least the 64 KiB
window, so both are recorded exactly: 152.6 and 4.6 windows of bytes; the lines' small
allocations may add a sampled window to either)."""

big = bytearray(10_000_000)  # the big line
small = bytearray(300_000)  # the small line
total = 0
for _ in range(40):  # some time, so that the report has samples to show
    total += sum(range(200_000))
print(len(big) + len(small), total)
