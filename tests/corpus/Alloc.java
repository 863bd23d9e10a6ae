// A JVM program that allocates small arrays and 2 MiB arrays and asks
// for a collection every four rounds.
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

public class Alloc {
	public static void main(String[] args) {
		List<byte[]> ring = new ArrayList<>();
		long sum = 0;
		for (int round = 0; round < 12; round++) {
			List<int[]> small = new ArrayList<>();
			for (int i = 0; i < 30000; i++)
				small.add(new int[4 + (i & 15)]);
			byte[] big = new byte[2 << 20];
			Arrays.fill(big, (byte) round);
			ring.add(big);
			if (ring.size() > 4)
				ring.remove(0);
			sum += small.size() + big[64];
			if (round % 4 == 3)
				System.gc();
		}
		System.out.println("alloc done " + sum);
	}
}
