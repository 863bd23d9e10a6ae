# A multi-process program: python3's multiprocessing pool of two forked
# workers (copy-on-write address spaces) that allocate and return results.
import multiprocessing


def work(n):
    rows = [bytes(4096) + str(i).encode() for i in range(n)]
    buf = bytearray(1 << 20)
    return len(rows) + len(buf)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    with multiprocessing.Pool(2) as pool:
        print("pool done", sum(pool.map(work, [3000] * 8)))
