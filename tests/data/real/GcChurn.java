// GcChurn: grow the Java heap with live arrays, drop them, call System.gc()
// so the collector shrinks (uncommits) the heap, and repeat.
// usage: java [GC flags] GcChurn [ROUNDS] [PEAK_MIB] [SLEEP_MS] [gc|nogc]
// With "nogc" it only sleeps after dropping the arrays, so that a periodic
// collection (G1: -XX:G1PeriodicGCInterval) does the shrinking.
import java.util.ArrayList;

public class GcChurn {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int peakMiB = args.length > 1 ? Integer.parseInt(args[1]) : 160;
        int sleepMs = args.length > 2 ? Integer.parseInt(args[2]) : 300;
        boolean gc = args.length <= 3 || !args[3].equals("nogc");
        Runtime rt = Runtime.getRuntime();
        for (int r = 0; r < rounds; r++) {
            ArrayList<byte[]> live = new ArrayList<>();
            for (int i = 0; i < peakMiB; i++) {
                for (int q = 0; q < 16; q++) { byte[] b = new byte[64 << 10];   // 16 x 64 KiB = 1 MiB, touched below
                for (int j = 0; j < b.length; j += 4096) b[j] = (byte) j;
                live.add(b); }
                // some short-lived garbage of mixed sizes
                for (int k = 0; k < 16; k++) sink += new byte[256 << (k % 8)].length;
            }
            System.out.printf("round %d grown: committed %d MiB%n", r, rt.totalMemory() >> 20);
            live = null;
            for (int g = 0; g < 3; g++) {
                if (gc) System.gc();
                Thread.sleep(sleepMs / 3);
            }
            System.out.printf("round %d shrunk: committed %d MiB%n", r, rt.totalMemory() >> 20);
        }
    }
}
