// The sandbox's prelude (src/sandbox/wrapper.js imports it first, and the
// model's module imports its `tick` under a name it cannot guess): console
// lines are captured, never printed, up to a cap; `tick` counts the loop
// iterations of the model's module (the host rewrites each loop's condition to
// call it), because the local runtime enforces no CPU limit and an endless loop
// would stall it; `fetch` carries the run's token when the run has the network
// (src/sandbox/network.rs). The model's module could import this one too, so
// its state is kept here and only read out: nothing exported resets it.

/** Characters of console output kept (the rest is only counted), so that the
 * error, the result and the note of what was cut fit the model's 50,000. */
export const MAX_CHARS = 40000;
/** Loop iterations the model's module may run in all. */
export const STEP_LIMIT = 200000000;

const state = { logs: [], chars: 0, dropped: 0, steps: 0, spent: false, egress: null };

/** What the run printed, and whether the loop guard stopped it. */
export function report() {
  return { logs: state.logs.slice(), dropped: state.dropped, spent: state.spent };
}

/** Set once, by the wrapper, before the model's function runs. */
export function allowEgress(token) {
  if (state.egress === null) state.egress = String(token);
}

export function tick() {
  if (++state.steps > STEP_LIMIT) {
    state.spent = true;
    throw new RangeError(`the sandbox stopped a loop: ${STEP_LIMIT} loop iterations are the limit`);
  }
  return true;
}

export function show(value) {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.stack || String(value);
  try {
    const json = JSON.stringify(value, (key, item) => (typeof item === "bigint" ? item.toString() : item), 2);
    return json === undefined ? String(value) : json;
  } catch {
    return String(value);
  }
}

function capture(level) {
  return (...items) => {
    const text = items.map(show).join(" ");
    const room = MAX_CHARS - state.chars;
    if (room <= 0) {
      state.dropped += text.length;
      return;
    }
    const kept = text.slice(0, room);
    state.dropped += text.length - kept.length;
    state.chars += kept.length + 1;
    state.logs.push({ level, text: kept });
  };
}

for (const level of ["log", "info", "warn", "error", "debug", "trace"]) {
  console[level] = capture(level);
}

// With the network, every request goes to the Worker (`globalOutbound`), which
// fetches it through the fetch guard; without it, the runtime's own refusal.
const runtimeFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  if (!state.egress) return runtimeFetch(input, init);
  const request = new Request(input, init);
  if (request.method !== "GET") throw new TypeError("the sandbox fetches with GET only");
  const headers = new Headers(request.headers);
  headers.set("x-edgebot-sandbox", state.egress);
  const response = await runtimeFetch(request.url, { method: "GET", headers });
  const refused = response.headers.get("x-edgebot-refused");
  if (refused) throw new Error(`the fetch guard refused ${request.url}: ${refused}`);
  return response;
};
