# python3 allocating small objects (pymalloc arenas) and large buffers
# (above malloc's mmap threshold: their own mappings), freed as it goes.
ring = []
total = 0
for rnd in range(12):
    small = [{'i': i, 's': str(i * rnd)} for i in range(30000)]
    big = bytearray(4 << 20)
    for off in range(0, len(big), 4096):
        big[off] = rnd & 255
    ring.append(bytes(2 << 20))
    if len(ring) > 3:
        ring.pop(0)
    total += len(small) + big[4096]
    del small, big
print("alloc done", total)
