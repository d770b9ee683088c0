// llama.cpp (its prebuilt CPU build, through node-llama-cpp) decoding the same GGUF file Butterfly serves, for
// `butterfly bench --peer`: loads the model once, then answers each "run" line on stdin with one measurement, the
// decode tokens/s of a greedy generation of TOKENS tokens after a 16-token prompt (the first token, which includes the
// prompt's prefill, excluded, as Butterfly's decode_tokens_per_second excludes it), printed as "tokens_per_second X".
import {getLlama} from "node-llama-cpp";
import readline from "node:readline";

const [, , modelPath, threadsArg, tokensArg, ...promptArgs] = process.argv;
const threads = parseInt(threadsArg, 10);
const tokens = parseInt(tokensArg, 10);
const prompt = promptArgs.map(t => parseInt(t, 10));
const llama = await getLlama({build: "never", gpu: false, logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 512, threads, batchSize: 512});
console.log("ready " + llama.cpuMathCores + " " + model.fileInfo.version);

const lines = readline.createInterface({input: process.stdin});
for await (const line of lines) {
  if (line.trim() !== "run") {
    break;
  }
  const sequence = context.getSequence();
  let n = 0;
  let first = 0;
  let last = 0;
  for await (const token of sequence.evaluate(prompt, {temperature: 0})) {
    last = performance.now();
    if (n === 0) {
      first = last;
    }
    n++;
    if (n === tokens) {
      break;
    }
  }
  sequence.dispose();
  console.log("tokens_per_second " + ((tokens - 1) * 1000 / (last - first)));
}
process.exit(0);
