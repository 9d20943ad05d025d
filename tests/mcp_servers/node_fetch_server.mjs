// A stdio MCP server in Node (no SDK), for the sandbox's network tests: one tool, `fetch`,
// which GETs a URL with Node's own fetch and answers the body (or the error) as text.
import { createInterface } from "node:readline";

const tools = [{
  name: "fetch",
  description: "GET a URL",
  inputSchema: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
}];

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

async function call(params) {
  try {
    const response = await fetch(params.arguments.url, { signal: AbortSignal.timeout(10000) });
    const text = await response.text();
    return { content: [{ type: "text", text }], isError: !response.ok };
  } catch (error) {
    const cause = error.cause ? ` (${error.cause.code || error.cause.message})` : "";
    return { content: [{ type: "text", text: `${error.message}${cause}` }], isError: true };
  }
}

const handlers = {
  initialize: (params) => ({
    protocolVersion: params.protocolVersion,
    capabilities: { tools: {} },
    serverInfo: { name: "node-fetch", version: "1.0.0" },
  }),
  "tools/list": () => ({ tools }),
  "tools/call": call,
  ping: () => ({}),
};

createInterface({ input: process.stdin }).on("line", async (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.id === undefined) return; // a notification
  const handler = handlers[message.method];
  if (!handler) {
    send({ id: message.id, error: { code: -32601, message: `no method ${message.method}` } });
    return;
  }
  send({ id: message.id, result: await handler(message.params || {}) });
});
