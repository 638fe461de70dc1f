// The frame the interop checks of the TypeScript SDK client against a server under test on
// stdio share: the server command from the arguments, a client connected to it, a time limit,
// and the exit status (0 when the check passes, 1 with a message on stderr when it fails, 2 on
// a usage error).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// Fails the check with `message` unless `condition` holds.
export function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

// Runs `body(client)` against the server whose command line follows the script's name
// (`script`, for the usage message), then exits.
export async function checkOverStdio(script, body) {
  const [command, ...args] = process.argv.slice(2);
  if (!command) {
    console.error(`usage: node ${script} <server command> [args...]`);
    process.exit(2);
  }
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "ts-interop", version: "1.0.0" });
  const timer = setTimeout(() => {
    console.error("interop check timed out");
    process.exit(1);
  }, 20000);
  try {
    await client.connect(transport);
    await body(client);
    await client.close();
    clearTimeout(timer);
    console.log("interop ok");
    process.exit(0);
  } catch (e) {
    console.error(`interop check failed: ${e?.stack ?? e}`);
    process.exit(1);
  }
}
