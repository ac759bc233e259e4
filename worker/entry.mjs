// The Worker's entry: worker-build's module (build/index.js), its classes
// exported without the proxies worker-build wraps them in.
//
// After the wasm traps (a panic: `panic = "abort"`), workers-rs's panic hook
// sets `criticalError` on the init state, and worker-build's proxied classes
// re-instantiate the module on the next call and rebuild every object made
// from the old one. To do that they stand a `Proxy` in front of each object:
// the runtime reads the object's properties through its traps, and every
// method read makes a new proxy. That was about 0.03 ms of the Worker's own
// CPU per inbound (docs/scale.md, "The entry without proxies").
//
// Here the entrypoint and each Durable Object are plain classes that make the
// same check once per call: while the mark is set, or after the module was
// instantiated again since the object was made, the call goes through
// worker-build's proxied class, whose construction re-instantiates the module
// first. tests/recovery.rs sets the mark and sees every conversation answered.
import { DurableObject } from "cloudflare:workers";
import Proxied, * as proxied from "../build/index.js";

// build/index.js sets this global as it loads; its proxies read the same object.
const wasm = globalThis.__worker_init_state;

// A trap marks the module for re-instantiation, as worker-build's proxies do.
function watched(call) {
  try {
    return call();
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) wasm.criticalError = true;
    throw error;
  }
}

// The class a proxy wraps: the proxy has only a `construct` trap, so it
// passes `prototype` through.
const unwrapped = (proxy) => proxy.prototype.constructor;

const Entrypoint = unwrapped(Proxied);

export default class Edgebot extends Entrypoint {
  static {
    for (const name of ["fetch", "queue", "scheduled", "email"]) {
      const handler = Entrypoint.prototype[name];
      this.prototype[name] = function (...args) {
        // The proxied entrypoint's construction re-instantiates a trapped module.
        if (wasm.criticalError) Reflect.construct(Proxied, [this.ctx, this.env]);
        return watched(() => handler.apply(this, args));
      };
    }
  }
}

// The runtime accepts RPC calls (`stub.post(path, body)`, src/runtime/channel_stub.rs)
// only on a class that extends `DurableObject`; wasm-bindgen's classes extend nothing.
function durableObject(Wrapped) {
  const Inner = unwrapped(Wrapped);
  return class extends DurableObject {
    #object;
    #made;

    constructor(ctx, env) {
      super(ctx, env);
      this.#object = new Inner(ctx, env);
      this.#made = wasm.instanceId;
    }

    // The wasm object to call: after a trap or a re-instantiation, one made by
    // the proxied class, which re-instantiates and rebuilds as it needs to.
    #live() {
      if (wasm.criticalError || this.#made !== wasm.instanceId) {
        this.#object = Reflect.construct(Wrapped, [this.ctx, this.env]);
        this.#made = wasm.instanceId;
      }
      return this.#object;
    }

    static {
      const handlers = ["fetch", "post", "alarm", "webSocketMessage", "webSocketClose", "webSocketError"];
      for (const name of handlers.filter((name) => name in Inner.prototype)) {
        this.prototype[name] = function (...args) {
          return watched(() => this.#live()[name](...args));
        };
      }
    }
  };
}

export const ChannelObject = durableObject(proxied.ChannelObject);
export const GatewayObject = durableObject(proxied.GatewayObject);
export const SignInObject = durableObject(proxied.SignInObject);
