// hot.js: the JIT target of the profiling tests. Run with
// node --perf-basic-prof, which writes /tmp/perf-PID.map naming each
// compiled function; the hot function below must appear in the flame graph
// by that name. Runs for argv[2] seconds (default 30).
'use strict';

function triageHotLoop(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 31) + i) | 0;
  }
  return x;
}

const seconds = Number(process.argv[2] || 30);
console.log('ready');
const end = Date.now() + seconds * 1000;
let sink = 0;
while (Date.now() < end) {
  sink ^= triageHotLoop(1e6);
}
if (sink === 42) console.log(sink);
