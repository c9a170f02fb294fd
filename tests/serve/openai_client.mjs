// The official OpenAI client (npm `openai`, pinned in package-lock.json)
// against `layerstream serve` on loopback: completions, chat, both streamed
// and whole, usage, tool calls, and the errors a client sees as typed exceptions.
//   node openai_client.mjs BASE_URL API_KEY MODEL_ID
// Prints one line per check; exits 1 at the first that fails.
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0, timeout: 30000 });

function check(cond, what) {
  if (!cond) {
    console.log("FAIL: " + what);
    process.exit(1);
  }
  console.log("ok: " + what);
}

async function expectError(promise, Type, status, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof Type && e.status === status, `${what}: ${Type.name} ${status} (${e.status}: ${e.message})`);
    return e;
  }
  check(false, what + ": no error was raised");
}

const prompt = "And God said, Let there be";

// Models.
const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === model, `models.list: [${models.data.map((m) => m.id)}]`);

// Completions, whole and streamed: the same greedy text.
const whole = await client.completions.create({ model, prompt, max_tokens: 20, temperature: 0 });
check(whole.object === "text_completion" && whole.choices[0].text.length > 0, `completions: "${whole.choices[0].text}"`);
check(whole.choices[0].finish_reason === "length" && whole.usage.completion_tokens === 20 &&
      whole.usage.total_tokens === whole.usage.prompt_tokens + 20, `completions usage: ${JSON.stringify(whole.usage)}`);
let streamed = "", last = null, chunks = 0;
for await (const c of await client.completions.create({ model, prompt, max_tokens: 20, temperature: 0, stream: true })) {
  streamed += c.choices[0].text;
  last = c.choices[0].finish_reason;
  chunks++;
}
check(streamed === whole.choices[0].text && last === "length", `completions stream: ${chunks} chunks, same text, finish ${last}`);

// Chat, whole and streamed, with usage in the stream.
const messages = [{ role: "system", content: "Answer from the scriptures." }, { role: "user", content: "Who made the heaven and the earth?" }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
const reply = chat.choices[0].message.content;
check(chat.object === "chat.completion" && chat.choices[0].message.role === "assistant" && reply.length > 0, `chat: "${reply}"`);
let sreply = "", role = null, usage = null, finish = null;
const stream = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } });
for await (const c of stream) {
  if (c.usage) usage = c.usage;
  const ch = c.choices[0];
  if (!ch) continue;
  if (ch.delta.role) role = ch.delta.role;
  if (ch.delta.content) sreply += ch.delta.content;
  if (ch.finish_reason) finish = ch.finish_reason;
}
check(sreply === reply && role === "assistant" && finish === chat.choices[0].finish_reason, `chat stream: same reply, role ${role}, finish ${finish}`);
check(usage && usage.completion_tokens === chat.usage.completion_tokens && usage.prompt_tokens === chat.usage.prompt_tokens, `chat stream usage: ${JSON.stringify(usage)}`);

// Stop strings: the text ends before the first one.
const cut = whole.choices[0].text.trim().split(" ")[1];
const stopped = await client.completions.create({ model, prompt, max_tokens: 20, temperature: 0, stop: [cut] });
check(stopped.choices[0].finish_reason === "stop" && !stopped.choices[0].text.includes(cut) &&
      whole.choices[0].text.startsWith(stopped.choices[0].text), `stop ["${cut}"]: "${stopped.choices[0].text}"`);

// Seeded sampling repeats itself.
const s1 = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 1, seed: 7 });
const s2 = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 1, seed: 7 });
check(s1.choices[0].text === s2.choices[0].text, `seed 7 twice: same text "${s1.choices[0].text}"`);

// The newer request fields: logprobs (streamed: the pieces join to the
// whole's), the penalties and logit_bias, JSON mode.
const lpWhole = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 });
const lpc = lpWhole.choices[0].logprobs.content;
check(lpc.length === 8 && lpc.every((t) => t.top_logprobs.length === 2 && t.top_logprobs[0].token === t.token) &&
      lpc.map((t) => t.token).join("") === lpWhole.choices[0].message.content, `chat logprobs: ${lpc.map((t) => t.logprob.toFixed(2))}`);
let lpStream = [];
for await (const c of await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2, stream: true })) {
  const ch = c.choices[0];
  if (ch && ch.logprobs) lpStream = lpStream.concat(ch.logprobs.content);
}
check(JSON.stringify(lpStream) === JSON.stringify(lpc), `chat logprobs streamed: the same ${lpStream.length} entries`);
const bannedId = (await (await fetch(baseURL + "/tokenize", { method: "POST", headers: { Authorization: "Bearer " + apiKey }, body: JSON.stringify({ content: lpc[0].token }) })).json()).tokens;
check(bannedId.length === 1, `the first token's text is one token: ${bannedId}`);
const penalised = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, frequency_penalty: 1, presence_penalty: 0.5,
                                                         logit_bias: { [String(bannedId[0])]: -100 }, logprobs: true });
const first = penalised.choices[0].logprobs.content[0].token;
check(first !== lpc[0].token, `penalties and logit_bias: the first token "${first}", not the banned "${lpc[0].token}"`);
const jsonMode = await client.chat.completions.create({ model, messages, max_tokens: 40, seed: 1, response_format: { type: "json_object" } });
const jtext = jsonMode.choices[0].message.content;
check(jtext.startsWith("{") && (jsonMode.choices[0].finish_reason !== "stop" || typeof JSON.parse(jtext) === "object"), `JSON mode: ${JSON.stringify(jtext.slice(0, 40))} (${jsonMode.choices[0].finish_reason})`);

// Structured outputs: OpenAI's response_format json_schema (strict). The
// model writes whitespace freely, hence the budget; an answer that stops
// must parse and keep to the schema.
const personSchema = { type: "object", properties: { name: { type: "string", maxLength: 12 }, age: { type: "integer" } },
                       required: ["name", "age"], additionalProperties: false };
const structured = await client.chat.completions.create({ model, messages, max_tokens: 400, seed: 1,
  response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: personSchema } } });
const stext = structured.choices[0].message.content;
let sok = stext.startsWith("{");
if (structured.choices[0].finish_reason === "stop") {
  const v = JSON.parse(stext);
  sok = sok && Object.keys(v).every((k) => k === "name" || k === "age") && typeof v.name === "string" &&
        [...v.name].length <= 12 && Number.isInteger(v.age);
}
check(sok, `json_schema: ${JSON.stringify(stext.replace(/\s+/g, " ").slice(0, 60))} (${structured.choices[0].finish_reason})`);

const two = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 1, seed: 5, n: 2 });
check(two.choices.length === 2 && two.choices[1].index === 1 && two.usage.completion_tokens === 12,
      `n = 2: ${JSON.stringify(two.choices.map((c) => c.message.content))}`);

// Tool calls. The KJV model calls no tool on its own: tool_choice
// "required" and a named function decode the call under the tools'
// schemas (greedy: it writes whitespace runs between the JSON's tokens,
// hence the budget and the server's -c 2048). The arguments must parse and
// keep to the named tool's parameters.
const verseTool = { type: "function", function: { name: "find_verse", description: "Find a verse.",
  parameters: { type: "object", properties: { book: { enum: ["Genesis", "Exodus"] }, chapter: { type: "integer", minimum: 1, maximum: 50 } },
                required: ["book", "chapter"], additionalProperties: false } } };
const sayTool = { type: "function", function: { name: "say",
  parameters: { type: "object", properties: { text: { type: "string", maxLength: 10 } }, required: ["text"], additionalProperties: false } } };
const keepsTo = {
  find_verse: (v) => Object.keys(v).sort().join() === "book,chapter" && ["Genesis", "Exodus"].includes(v.book) &&
                     Number.isInteger(v.chapter) && v.chapter >= 1 && v.chapter <= 50,
  say: (v) => Object.keys(v).join() === "text" && typeof v.text === "string" && [...v.text].length <= 10,
};
const toolMessages = [{ role: "user", content: "Where is the light?" }];
function checkCall(choice, want, what) {
  const calls = choice.message.tool_calls;
  check(choice.finish_reason === "tool_calls" && choice.message.content === null && calls && calls.length === 1 &&
        calls[0].type === "function" && /^call_[0-9a-f]{24}$/.test(calls[0].id) && (!want || calls[0].function.name === want),
        `${what}: ${JSON.stringify(calls)} (${choice.finish_reason})`);
  const f = calls[0].function;
  check(keepsTo[f.name](JSON.parse(f.arguments)), `${what}: the arguments keep to ${f.name}'s schema: ${f.arguments}`);
  return calls[0];
}
const required = await client.chat.completions.create({ model, messages: toolMessages, tools: [verseTool, sayTool],
                                                         tool_choice: "required", max_tokens: 800, temperature: 0 });
const firstCall = checkCall(required.choices[0], null, "tool_choice required");
const named = await client.chat.completions.create({ model, messages: toolMessages, tools: [sayTool, verseTool],
  tool_choice: { type: "function", function: { name: "find_verse" } }, max_tokens: 800, temperature: 0 });
checkCall(named.choices[0], "find_verse", "tool_choice find_verse");
// Streamed: the call's deltas joined, then finish_reason "tool_calls", usage as usual.
const parts = {};
let toolFinish = null, toolUsage = null, toolContent = "";
for await (const c of await client.chat.completions.create({ model, messages: toolMessages, tools: [sayTool, verseTool],
  tool_choice: { type: "function", function: { name: "find_verse" } }, max_tokens: 800, temperature: 0, stream: true,
  stream_options: { include_usage: true } })) {
  if (c.usage) toolUsage = c.usage;
  const ch = c.choices[0];
  if (!ch) continue;
  if (ch.delta.content) toolContent += ch.delta.content;
  for (const t of ch.delta.tool_calls || []) {
    const p = (parts[t.index] ??= { id: "", name: "", arguments: "" });
    if (t.id) p.id = t.id;
    if (t.function && t.function.name) p.name += t.function.name;
    if (t.function && t.function.arguments) p.arguments += t.function.arguments;
  }
  if (ch.finish_reason) toolFinish = ch.finish_reason;
}
const namedCall = named.choices[0].message.tool_calls[0];
check(Object.keys(parts).join() === "0" && toolFinish === "tool_calls" && toolContent === "" && /^call_/.test(parts[0].id) &&
      parts[0].name === "find_verse" && parts[0].arguments === namedCall.function.arguments,
      `tool call streamed: ${JSON.stringify(parts)} (${toolFinish}), the whole answer's arguments`);
check(toolUsage && toolUsage.completion_tokens === named.usage.completion_tokens, `tool call streamed usage: ${JSON.stringify(toolUsage)}`);
// The call and its result sent back (content null, a tool message): the
// model answers in words with tool_choice "none".
const after = await client.chat.completions.create({ model, tools: [verseTool, sayTool], tool_choice: "none", max_tokens: 8, temperature: 0,
  messages: [...toolMessages, { role: "assistant", content: null, tool_calls: [firstCall] },
             { role: "tool", tool_call_id: firstCall.id, content: "Let there be light" }] });
check(typeof after.choices[0].message.content === "string" && !after.choices[0].message.tool_calls &&
      after.usage.prompt_tokens > required.usage.prompt_tokens, `tool result sent back: "${after.choices[0].message.content}"`);

// Errors, as the client's typed exceptions.
let e = await expectError(client.completions.create({ model: "gpt-4o", prompt, max_tokens: 4 }), OpenAI.NotFoundError, 404, "unknown model");
check(e.code === "model_not_found" && e.param === "model", `unknown model: code ${e.code}, param ${e.param}`);
e = await expectError(client.completions.create({ model, prompt, temperature: "hot" }), OpenAI.BadRequestError, 400, "wrong type");
check(e.param === "temperature", `wrong type: param ${e.param}: ${e.message}`);
e = await expectError(client.completions.create({ model, prompt: "In the beginning ".repeat(1200), max_tokens: 4 }), OpenAI.BadRequestError, 400, "prompt past the context");
check(e.code === "context_length_exceeded" && /context is \d+ tokens/.test(e.message), `context: ${e.message}`);
e = await expectError(client.chat.completions.create({ model, messages, response_format: { type: "json_schema",
  json_schema: { name: "p", schema: { type: "object", properties: { name: { type: "string", pattern: "(?=a)" } } } } } }),
  OpenAI.BadRequestError, 400, "unsupported schema keyword");
check(e.param === "response_format" && e.message.includes("'pattern' at /properties/name: lookahead"), `json_schema refused: ${e.message}`);
e = await expectError(client.chat.completions.create({ model, messages: [{ role: "function", content: "x" }] }), OpenAI.BadRequestError, 400, "bad role");
check(e.param === "messages[0].role", `bad role: param ${e.param}`);
e = await expectError(client.chat.completions.create({ model, messages, tools: [{ type: "function", function: { name: "say it" } }] }),
  OpenAI.BadRequestError, 400, "bad tool name");
check(e.param === "tools[0].function.name", `bad tool name: param ${e.param}: ${e.message}`);
e = await expectError(client.chat.completions.create({ model, messages, tools: [sayTool], tool_choice: { type: "function", function: { name: "find_verse" } } }),
  OpenAI.BadRequestError, 400, "tool_choice names no given tool");
check(e.param === "tool_choice", `tool_choice names no given tool: param ${e.param}`);
// An error on a streamed request comes before the stream: the same exception.
await expectError(client.chat.completions.create({ model, messages: [], stream: true }), OpenAI.BadRequestError, 400, "stream: no messages");
const wrongKey = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "not-the-key", maxRetries: 0 });
e = await expectError(wrongKey.models.list(), OpenAI.AuthenticationError, 401, "wrong API key");
check(e.code === "invalid_api_key", `wrong API key: code ${e.code}`);
console.log("PASS: the openai client");
