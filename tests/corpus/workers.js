// node with two worker threads that allocate objects, strings and
// ArrayBuffers and let the collector take them back.
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

function churn(seed) {
  const ring = [];
  let sum = 0;
  for (let round = 0; round < 12; round++) {
    const objs = [];
    for (let i = 0; i < 15000; i++)
      objs.push({ i, s: 'k' + (i * seed + round), v: [i, i + 1] });
    const buf = new ArrayBuffer(1 << 20);
    new Uint8Array(buf).fill(round & 255);
    const f = new Float64Array(128 * 1024);
    for (let i = 0; i < f.length; i += 512) f[i] = i;
    ring.push(buf);
    if (ring.length > 4) ring.shift();
    sum += objs.length + f[512];
  }
  return sum;
}

if (isMainThread) {
  let done = 0, total = 0;
  for (let w = 1; w <= 2; w++) {
    const worker = new Worker(__filename, { workerData: w });
    worker.on('message', (n) => {
      total += n;
      if (++done === 2) console.log('workers done', total);
    });
  }
} else {
  parentPort.postMessage(churn(workerData));
}
