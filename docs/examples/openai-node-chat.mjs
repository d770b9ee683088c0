// The official OpenAI Node library against a Butterfly coordinator: a chat completion whole, then streamed; a reply
// in a JSON schema; a tool-calling conversation.
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

// A reply constrained to a JSON schema.
const shaped = await client.chat.completions.create({
  model: whole.model,
  messages: [{ role: "user", content: "Name a butterfly and its wingspan in mm." }],
  temperature: 0,
  response_format: {
    type: "json_schema",
    json_schema: {
      name: "butterfly", strict: true, schema: {
        type: "object", additionalProperties: false, required: ["name", "wingspan_mm"],
        properties: { name: { type: "string", maxLength: 12 }, wingspan_mm: { type: "integer" } },
      },
    },
  },
});
console.log("json_schema:", shaped.choices[0].message.content, "->", JSON.stringify(JSON.parse(shaped.choices[0].message.content)));

// A tool-calling conversation: the model calls get_weather (named: its arguments follow the schema), the tool's
// answer goes back with the call, and the model replies.
const tools = [{
  type: "function",
  function: {
    name: "get_weather", description: "Current weather of a city", strict: true,
    parameters: {
      type: "object", additionalProperties: false, required: ["city"],
      properties: { city: { type: "string", maxLength: 10 } },
    },
  },
}];
const asked = [{ role: "user", content: "What is the weather in Paris?" }];
const call = await client.chat.completions.create({
  model: whole.model, messages: asked, tools, temperature: 0,
  tool_choice: { type: "function", function: { name: "get_weather" } },
});
const calls = call.choices[0].message.tool_calls;
console.log("tool_calls:", JSON.stringify(calls), call.choices[0].finish_reason);
const answer = await client.chat.completions.create({
  model: whole.model, tools, temperature: 0, max_completion_tokens: 12,
  messages: [...asked, call.choices[0].message,
    { role: "tool", tool_call_id: calls[0].id, content: JSON.stringify({ temperature_c: 21 }) }],
});
console.log("after the tool:", JSON.stringify(answer.choices[0].message), answer.choices[0].finish_reason,
  JSON.stringify(answer.usage));
