// Times an ONNX model on ONNX Runtime's CPU provider (onnxruntime-node), for
// bench/models/compare_ort.py, which writes the inputs and reads the line this prints.
//
// usage: node ort_time.js MODEL.onnx INPUTS.json RUNS THREADS
// INPUTS.json: [{"name", "type" ("float32", "int64", ...), "shape", "file"}], each file
// the input's raw little-endian elements. Prints one JSON line: {"times_ms": [...]}, the
// RUNS runs after 3 untimed warm-up runs.
const fs = require('fs');
const ort = require('onnxruntime-node');

const ARRAYS = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array,
                int8: Int8Array};

async function main() {
  const [model, inputsPath, runs, threads] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all'});
  const feeds = {};
  for (const input of JSON.parse(fs.readFileSync(inputsPath, 'utf8'))) {
    const bytes = fs.readFileSync(input.file);
    const array = new ARRAYS[input.type](bytes.buffer, bytes.byteOffset,
                                         bytes.length / ARRAYS[input.type].BYTES_PER_ELEMENT);
    feeds[input.name] = new ort.Tensor(input.type, array, input.shape);
  }
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(runs); ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  console.log(JSON.stringify({times_ms: times}));
}

main().catch((error) => {
  console.error(`ort_time.js: ${error.message}`);
  process.exit(1);
});
