// The OpenAI Node SDK, unmodified, against the gateway at GATEWAY_BASE_URL: structured output with
// zodTextFormat and a zodResponsesFunction round trip, plain (responses.parse) and streamed
// (responses.stream). Prints one JSON line of what it got; the pytest side asserts on it.
import OpenAI from "openai";
import { zodResponsesFunction, zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.env.GATEWAY_BASE_URL, apiKey: "none", maxRetries: 0, timeout: 30000 });
const Weather = z.object({ city: z.string(), temperature_c: z.number().int() });
const format = zodTextFormat(Weather, "weather");
const tools = [zodResponsesFunction({ name: "get_weather", description: "The weather in a city.",
                                      parameters: z.object({ city: z.string() }) })];

async function turn(streamed, request) {
  if (!streamed) return client.responses.parse(request);
  const stream = client.responses.stream(request);
  const kinds = [];
  for await (const event of stream) kinds.push(event.type);
  const final = await stream.finalResponse();
  final.eventKinds = kinds;
  return final;
}

const results = {};
for (const streamed of [false, true]) {
  const mode = streamed ? "streamed" : "plain";
  const parsed = await turn(streamed, { model: "m", input: "The weather in Paris?", text: { format } });
  const first = await turn(streamed, { model: "m", input: "The weather in Paris?", text: { format }, tools });
  const call = first.output.find((item) => item.type === "function_call");
  const output = { type: "function_call_output", call_id: call.call_id, output: '{"temperature_c": 21}' };
  const second = await turn(streamed, { model: "m", input: [...first.output, output], text: { format }, tools });
  results[mode] = {
    parsed: parsed.output_parsed,
    call: { name: call.name, parsed_arguments: call.parsed_arguments },
    after_tool: second.output_parsed,
    kinds: parsed.eventKinds ?? null,
    reasoning: parsed.output.filter((item) => item.type === "reasoning").flatMap((item) => item.content.map((c) => c.text)),
  };
}
console.log(JSON.stringify(results));
