// The official OpenAI Node library against a Butterfly coordinator: a chat completion whole, then streamed.
//
//   npm install openai
//   node openai-node-chat.mjs [base URL, default http://127.0.0.1:8080/v1]
//
// With API keys (./butterfly up --api-keys FILE, docs/security.md) set BUTTERFLY_API_KEY to one of them.
// Not part of the test suite (it needs npm and a running cluster: ./butterfly up).
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.argv[2] ?? "http://127.0.0.1:8080/v1",
  apiKey: process.env.BUTTERFLY_API_KEY ?? "none", // any string when the cluster has no keys
});
const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "What is a butterfly?" },
];

const whole = await client.chat.completions.create({
  model: (await client.models.list()).data[0].id,
  messages,
  max_completion_tokens: 16,
  temperature: 0,
});
console.log("whole:", JSON.stringify(whole.choices[0].message), whole.choices[0].finish_reason,
  JSON.stringify(whole.usage));

const stream = await client.chat.completions.create({
  model: whole.model,
  messages,
  max_completion_tokens: 16,
  temperature: 0,
  stream: true,
  stream_options: { include_usage: true },
});
let text = "";
let chunks = 0;
let finish = null;
let usage = null;
for await (const chunk of stream) {
  chunks++;
  const choice = chunk.choices[0];
  if (choice) {
    text += choice.delta.content ?? "";
    finish = choice.finish_reason ?? finish;
  }
  usage = chunk.usage ?? usage;
}
console.log("streamed:", chunks, "chunks,", JSON.stringify(text), finish, JSON.stringify(usage));
console.log("same text:", text === whole.choices[0].message.content);

try {
  await client.chat.completions.create({
    model: whole.model,
    messages,
    tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
  });
} catch (e) {
  console.log("refused:", e.constructor.name, e.status, e.param, "-", e.message);
}
