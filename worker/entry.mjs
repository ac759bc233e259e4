// The Worker's entry: worker-build's module (build/index.js) as it is, with
// one change. The runtime accepts RPC calls only on a Durable Object class
// that extends `DurableObject`; wasm-bindgen's classes extend nothing. The
// channel object's class is put on that chain (worker-build does the same for
// its emscripten output), so the front Worker hands it a request body by one
// call, `stub.post(path, body)`, rather than an HTTP request it would build,
// and the object read and answer (src/runtime/channel_stub.rs).
import { DurableObject } from "cloudflare:workers";
import { ChannelObject } from "../build/index.js";

Object.setPrototypeOf(ChannelObject.prototype, DurableObject.prototype);
Object.setPrototypeOf(ChannelObject, DurableObject);

export * from "../build/index.js";
export { default } from "../build/index.js";
