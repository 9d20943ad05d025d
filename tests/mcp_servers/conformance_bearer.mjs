// Preloaded into the MCP conformance suite (node --import): adds
// "Authorization: Bearer $PLUGHOST_MCP_TOKEN" to every HTTP request it makes.
// plughost serve --mcp-http requires a bearer token and the suite has no option
// to send one. Both fetch and undici.request go through undici's global dispatcher.
import { createRequire } from "node:module";

const require = createRequire(process.env.PLUGHOST_NODE_MODULES + "/");
const { Agent, setGlobalDispatcher } = require("undici");
const authorization = `Bearer ${process.env.PLUGHOST_MCP_TOKEN}`;

function withToken(headers) {
  if (Array.isArray(headers)) {
    return [...headers, "authorization", authorization];
  }
  return { ...(headers ?? {}), authorization };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) =>
    dispatch({ ...options, headers: withToken(options.headers) }, handler),
  ),
);
