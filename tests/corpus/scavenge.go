// A Go program whose heap grows to about 128 MiB, is dropped, and is then
// given back to the kernel by the runtime's background scavenger (its own
// goroutine, on whichever thread the scheduler gives it): madvise
// MADV_DONTNEED of the freed spans, paced at about 1% of a CPU.  The
// program waits while the scavenger works, and ends when the runtime says
// most of the heap is released (or after 4 s).
package main

import (
	"fmt"
	"runtime"
	"time"
)

var sink [][]byte

func main() {
	// Grow: 128 buffers of 1 MiB, all kept, each page written, with
	// small garbage beside them; the collector runs as the heap grows.
	var sum int
	for round := 0; round < 2; round++ {
		for i := 0; i < 64; i++ {
			b := make([]byte, 1<<20)
			for off := 0; off < len(b); off += 4096 {
				b[off] = byte(round + i)
			}
			sink = append(sink, b)
			sum += len(make([]int, 100+i))
		}
	}
	// Drop it, and let one collection find it dead.
	sink = nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	grown := ms.HeapSys
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		time.Sleep(50 * time.Millisecond)
		runtime.ReadMemStats(&ms)
		if ms.HeapReleased > grown*3/4 {
			break
		}
	}
	fmt.Printf("scavenge done %d: heap %d MiB, released %d MiB after %d ms\n", sum,
		grown>>20, ms.HeapReleased>>20, time.Since(start).Milliseconds())
}
