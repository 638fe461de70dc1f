// Interop check: the TypeScript SDK client gets a prompt whose arguments are typed on the
// server (`days: u32`, `metric: bool`, an optional enum), sending them as the protocol does:
// strings. Also calls its tool with structured output (progress is not checked: this SDK drops
// progress notifications that arrive just before their response).
// Usage: node ts_client_typed_prompt.mjs <weather server command> [args...]
import { check, checkOverStdio } from "./stdio_check.mjs";

await checkOverStdio("ts_client_typed_prompt.mjs", async (client) => {

  const { prompts } = await client.listPrompts();
  const report = prompts.find((p) => p.name === "weekly_report");
  check(report, `no weekly_report prompt in ${JSON.stringify(prompts)}`);
  const names = report.arguments.map((a) => a.name).join(",");
  check(names === "city,days,metric,style", `arguments ${names}`);

  const prompt = await client.getPrompt({
    name: "weekly_report",
    arguments: { city: "Oslo", days: "3", metric: "false", style: "detailed" },
  });
  const text = prompt.messages[0].content.text;
  check(
    text === "Write a detailed weather report for Oslo covering 3 days, temperatures in Fahrenheit.",
    `prompt ${JSON.stringify(prompt)}`,
  );

  let refused = null;
  try {
    await client.getPrompt({ name: "weekly_report", arguments: { city: "Oslo", days: "three", metric: "true" } });
  } catch (e) {
    refused = e;
  }
  check(refused && refused.code === -32602 && String(refused.message).includes("`days`"),
    `a bad number was not refused naming it: ${refused}`);

  const called = await client.callTool({ name: "get_forecast", arguments: { city: "Oslo", days: 2 } });
  check(!called.isError && called.structuredContent?.days?.length === 2,
    `get_forecast answered ${JSON.stringify(called)}`);
});
