// Interop check: the TypeScript SDK client against a server under test on stdio.
// Usage: node ts_client_server_smoke.mjs <server command> [args...]
// Connects to the example server (`mcp-example`), lists and calls the `echo` and `add` tools,
// reads `example://readme`, gets the `greeting` prompt and exits 0; any mismatch exits 1 with a
// message on stderr.
import { check, checkOverStdio } from "./stdio_check.mjs";

await checkOverStdio("ts_client_server_smoke.mjs", async (client) => {
  const info = client.getServerVersion();
  check(info && info.name === "mcp-example", `unexpected serverInfo ${JSON.stringify(info)}`);

  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === "echo");
  check(echo, "no echo tool listed");
  check(echo.inputSchema.type === "object", "echo input schema is not an object");

  const called = await client.callTool({ name: "echo", arguments: { text: "interop" } });
  check(!called.isError, `echo failed: ${JSON.stringify(called)}`);
  check(called.content[0].type === "text" && called.content[0].text === "interop",
    `echo answered ${JSON.stringify(called.content)}`);

  const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  check(added.structuredContent && added.structuredContent.sum === 5,
    `add answered ${JSON.stringify(added)}`);

  const read = await client.readResource({ uri: "example://readme" });
  check(read.contents[0].text.startsWith("This is the example server"), `read ${JSON.stringify(read)}`);

  const prompt = await client.getPrompt({ name: "greeting", arguments: { name: "Ada" } });
  const text = prompt.messages[0].content.text;
  check(text.includes("Ada"), `prompt ${JSON.stringify(prompt)}`);
});
