// churn.js: grow and shrink the V8 heap (old space, large objects, array
// buffers) in the main thread and in worker threads, with explicit GCs.
// usage: node --expose-gc churn.js [WORKERS] [ROUNDS] [MIB]
'use strict';
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');

function churn(rounds, mib, tag) {
  let sink = 0;
  for (let r = 0; r < rounds; r++) {
    let live = [];
    for (let i = 0; i < mib * 16; i++) {          // ~64 KiB per step
      const a = new Array(2048).fill(i);          // old-space objects
      const s = 'x'.repeat(1024) + i;             // strings
      const b = new Uint8Array(32 << 10);         // off-heap ArrayBuffer
      b[0] = i; b[b.length - 1] = i;
      live.push(a, s, b);
      if (i % 64 === 0) live.push(new Float64Array(128 << 10)); // 1 MiB large object
    }
    sink += live.length;
    live = null;
    for (let g = 0; g < 3; g++) global.gc();
  }
  return sink;
}

if (isMainThread) {
  const workers = +(process.argv[2] || 2), rounds = +(process.argv[3] || 3), mib = +(process.argv[4] || 32);
  let done = 0;
  for (let w = 0; w < workers; w++) {
    const wk = new Worker(__filename, { workerData: { rounds, mib }});
    wk.on('message', (m) => { if (++done === workers) console.log('workers done'); });
  }
  console.log('main', churn(rounds, mib, 'main'));
} else {
  parentPort.postMessage(churn(workerData.rounds, workerData.mib, 'worker'));
}
