// The sandbox's main module: the host POSTs `{ files: [{ path, data (base64),
// read_only }] }`, the model's module (`./code.js`) gets `{ workspace }` and
// its default export's value, console lines, error (with its stack) and the
// files it wrote come back as JSON. No env, no bindings, no network
// (`globalOutbound: null`) unless the operator allows guarded fetches (then
// `egress` is the run's token); the isolate is fresh for each run.
import { report, allowEgress, show, MAX_CHARS } from "./prelude.js";
import * as code from "./code.js";

/** Bytes the module may write in one run (the host's quotas then apply). */
const MAX_WRITTEN_BYTES = 20 * 1024 * 1024;

function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

function toBase64(bytes) {
  let binary = "";
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(index, index + 0x8000));
  }
  return btoa(binary);
}

function checkPath(path) {
  if (typeof path !== "string" || path.length === 0) throw new TypeError("a workspace path is a non-empty string");
  if (path.startsWith("/") || path.includes("\0") || path.split("/").some((part) => part === ".." || part === ".")) {
    throw new Error(`${JSON.stringify(path)} is not a workspace path (relative, no "..")`);
  }
}

function makeWorkspace(files) {
  const store = new Map();
  for (const file of files) store.set(file.path, { bytes: fromBase64(file.data), readOnly: !!file.read_only });
  const written = new Map();
  let writtenBytes = 0;
  const find = (path) => {
    checkPath(path);
    const file = store.get(path);
    if (!file) throw new Error(`the workspace has no file ${path} (workspace.list() names them)`);
    return file;
  };
  const workspace = Object.freeze({
    list: () => [...store.entries()].map(([path, file]) => ({ path, size: file.bytes.length, readOnly: file.readOnly })),
    read: (path) => new TextDecoder().decode(find(path).bytes),
    readBytes: (path) => find(path).bytes.slice(),
    write: (path, data) => {
      checkPath(path);
      if (store.get(path)?.readOnly) throw new Error(`${path} is read-only (an attachment)`);
      let bytes;
      if (typeof data === "string") bytes = new TextEncoder().encode(data);
      else if (data instanceof Uint8Array) bytes = data.slice();
      else if (data instanceof ArrayBuffer) bytes = new Uint8Array(data.slice(0));
      else throw new TypeError("workspace.write takes a string or a Uint8Array");
      writtenBytes += bytes.length;
      if (writtenBytes > MAX_WRITTEN_BYTES) throw new RangeError(`a run may write at most ${MAX_WRITTEN_BYTES} bytes`);
      store.set(path, { bytes, readOnly: false });
      written.set(path, bytes);
    },
  });
  const collect = () => [...written.entries()].map(([path, bytes]) => ({ path, data: toBase64(bytes) }));
  return { workspace, collect };
}

function describe(error) {
  if (error instanceof Error) {
    return { name: error.name, message: String(error.message), stack: String(error.stack || "").slice(0, MAX_CHARS) };
  }
  return { name: "thrown", message: show(error).slice(0, MAX_CHARS), stack: "" };
}

export default {
  async fetch(request) {
    const input = await request.json();
    const { workspace, collect } = makeWorkspace(input.files || []);
    if (input.egress) allowEgress(input.egress);
    let value = null;
    let error = null;
    try {
      if (typeof code.default !== "function") {
        throw new TypeError("the module must `export default async function main({ workspace }) { … }`");
      }
      const returned = await code.default({ workspace });
      value = returned === undefined ? null : show(returned).slice(0, MAX_CHARS + 1);
    } catch (thrown) {
      error = describe(thrown);
    }
    const printed = report();
    return Response.json({
      value,
      logs: printed.logs,
      dropped: printed.dropped,
      error,
      loop_limit: printed.spent,
      written: error ? [] : collect(),
    });
  },
};
