// The TypeScript SDK's Streamable HTTP client against one of our HTTP servers.
//
// Usage: node tests/interop/ts-http-client.mjs <mcp-url>
// The server must serve the example server, `mcp-example` (tools echo, countdown, ask_model). Exits 0 when
// every check passed, 1 (with the reason on stderr) otherwise.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

function check(condition, what) {
  if (!condition) {
    throw new Error(`check failed: ${what}`);
  }
  console.error(`ok: ${what}`);
}

async function main() {
  const url = new URL(process.argv[2]);
  const client = new Client(
    { name: 'ts-http-interop', version: '1.0.0' },
    { capabilities: { sampling: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    model: 'ts-model',
    role: 'assistant',
    content: { type: 'text', text: 'hello from typescript' },
  }));
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  check(typeof transport.sessionId === 'string' && /^[\x21-\x7e]+$/.test(transport.sessionId),
    'the server issued a visible-ASCII session id');
  check(client.getServerVersion()?.name !== undefined, 'initialize returned serverInfo');

  const tools = await client.listTools();
  const names = tools.tools.map((t) => t.name);
  check(['echo', 'countdown', 'ask_model'].every((n) => names.includes(n)), `tools/list has echo, countdown, ask_model (${names})`);

  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'ping' } });
  check(echoed.content?.[0]?.text === 'ping', 'tools/call echo answers (JSON or SSE)');

  const progress = [];
  const countdown = await client.callTool(
    { name: 'countdown', arguments: { steps: 3, delay_ms: 50 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  check(!countdown.isError, 'tools/call countdown succeeds');
  check(progress.length === 3, `three progress notifications arrived (${progress})`);

  const sampled = await client.callTool({ name: 'ask_model', arguments: { question: 'hi' } });
  const text = sampled.content?.[0]?.text ?? '';
  check(text.includes('hello from typescript'), `the server-to-client sampling request was answered (${text})`);

  await transport.terminateSession();
  check(transport.sessionId === undefined, 'DELETE ended the session');
  await client.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
  },
);
