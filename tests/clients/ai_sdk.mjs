// The Vercel AI SDK (ai + @ai-sdk/openai), unmodified, on openai.responses(...) against the gateway at
// GATEWAY_BASE_URL: generateObject / streamObject, and a tool round trip with a structured answer
// through generateText / streamText. Prints one JSON line of what it got.
import { createOpenAI } from "@ai-sdk/openai";
import { Output, generateObject, generateText, stepCountIs, streamObject, streamText, tool } from "ai";
import { z } from "zod";

const openai = createOpenAI({ baseURL: process.env.GATEWAY_BASE_URL, apiKey: "none" });
const model = openai.responses("m");
const schema = z.object({ city: z.string(), temperature_c: z.number().int() });
const looked_up = [];
const tools = {
  get_weather: tool({
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => { looked_up.push(city); return { temperature_c: 21 }; },
  }),
};
const prompt = "The weather in Paris?";
// AI_SDK_STORE=false: the SDK sends earlier items back in full instead of as item references
const providerOptions = process.env.AI_SDK_STORE === "false" ? { openai: { store: false } } : {};
const settings = { model, maxRetries: 0, prompt, providerOptions };
const results = {};

results.generateObject = (await generateObject({ ...settings, schema, schemaName: "weather" })).object;

const objects = streamObject({ ...settings, schema, schemaName: "weather" });
let partials = 0;
for await (const _ of objects.partialObjectStream) partials += 1;
results.streamObject = await objects.object;
results.streamObjectPartials = partials;

const withTools = { ...settings, tools, stopWhen: stepCountIs(3), output: Output.object({ schema }) };
const generated = await generateText(withTools);
results.generateText = { output: generated.output, steps: generated.steps.length,
                         reasoning: generated.steps.map((s) => s.reasoning.length),
                         calls: generated.steps.flatMap((s) => s.toolCalls.map((c) => [c.toolName, c.input])) };

const streamed = streamText(withTools);
const parts = new Set();
for await (const part of streamed.fullStream) parts.add(part.type);
results.streamText = { output: await streamed.output, steps: (await streamed.steps).length,
                       parts: [...parts].sort() };
results.looked_up = looked_up;
console.log(JSON.stringify(results));
