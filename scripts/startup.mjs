#!/usr/bin/env node
// `make bench`: how long V8 takes to start the Worker, as workerd does it when an
// isolate loads the script: compile build/index_bg.wasm (WebAssembly.compile), then
// evaluate the wasm-bindgen glue (build/index.js), whose top level instantiates the
// module with its real imports and runs `__wbindgen_start`. Medians over RUNS fresh
// runs, with the gzipped size beside them.
//
//   node scripts/startup.mjs [LABEL=DIR ...]     (default: now=build)
//
// With no arguments it first prints BEFORE: the figures measured on the commit
// before minijinja came back into the Worker (73bac5e, with its hand-written
// renderer), in the same run as the first measurement of the change, so the two
// can be read side by side (`benches/startup.rs` gives the first requests).
//
// V8 compiles wasm functions lazily, on first call (its default, and workerd's), so
// "compile" is decoding and validating the module; "instantiate" includes the start.
// Each DIR holds an index.js and index_bg.wasm. The glue imports
// "cloudflare:workers" and "./index_bg.wasm"; both are replaced by stand-ins (an
// empty WorkerEntrypoint class and the module just compiled), so what is timed is
// V8's work and the glue's, not workerd's. Node 22's V8 predates the compact
// import section that wasm-opt writes (workerd's V8 reads it), so the timed copy
// has its import section spelled out in full (`expandImports`): the same code.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const RUNS = Number(process.env.STARTUP_RUNS ?? 15);
// Measured on a quiet machine (2 cores), the same run as the first "now" of
// minijinja's return (7.1 -> 9.4 ms total); benches/startup.rs measured the first
// requests with the same builds: GET /health 530 ms before, 455 ms after (wrangler
// dev's own first-request path: the next GET takes 6 ms), first webhook 24 -> 22 ms.
const BEFORE =
  "startup before  compile    4.6 ms, instantiate    2.6 ms, total    7.1 ms (median of 15); " +
  "wasm 1718795 bytes, 704712 gzipped (recorded at 73bac5e, the hand-written renderer)";
if (process.argv.length <= 2) console.log(BEFORE);
const targets = (process.argv.length > 2 ? process.argv.slice(2) : ["now=build"]).map((arg) => {
  const [label, dir] = arg.includes("=") ? arg.split("=") : [arg, arg];
  return { label, dir: resolve(dir) };
});

// workerd's globals the glue's top level touches.
globalThis.addEventListener ??= () => {};

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function leb(value) {
  const out = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value) byte |= 0x80;
    out.push(byte);
  } while (value);
  return out;
}

// The module with a compact import section (the proposal's 0x7F and 0x7E forms)
// rewritten as one entry per import.
function expandImports(buf) {
  let pos = 8;
  const u32 = () => {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      const b = buf[pos++];
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
    }
  };
  const name = () => {
    const length = u32();
    pos += length;
    return buf.subarray(pos - length, pos);
  };
  const heapType = () => {
    while (buf[pos++] & 0x80);
  };
  const valType = () => {
    const b = buf[pos++];
    if (b === 0x63 || b === 0x64) heapType();
  };
  const limits = () => {
    const flags = buf[pos++];
    u32();
    if (flags & 1) u32();
  };
  const externType = () => {
    const start = pos;
    const kind = buf[pos++];
    if (kind === 0x00) u32();
    else if (kind === 0x01) (valType(), limits());
    else if (kind === 0x02) limits();
    else if (kind === 0x03) (valType(), pos++);
    else if (kind === 0x04) (pos++, u32());
    else throw new Error(`import kind ${kind} at ${start}`);
    return buf.subarray(start, pos);
  };
  const parts = [buf.subarray(0, 8)];
  while (pos < buf.length) {
    const sectionStart = pos;
    const id = buf[pos++];
    const size = u32();
    const end = pos + size;
    if (id !== 2) {
      parts.push(buf.subarray(sectionStart, end));
      pos = end;
      continue;
    }
    const entries = [];
    for (let groups = u32(); groups > 0; groups--) {
      const module = name();
      const field = name();
      if (field.length === 0 && buf[pos] === 0x7f) {
        pos++;
        for (let n = u32(); n > 0; n--) entries.push([module, name(), externType()]);
      } else if (field.length === 0 && buf[pos] === 0x7e) {
        pos++;
        const type = externType();
        for (let n = u32(); n > 0; n--) entries.push([module, name(), type]);
      } else entries.push([module, field, externType()]);
    }
    const body = [...leb(entries.length)];
    for (const [module, field, type] of entries) body.push(...leb(module.length), ...module, ...leb(field.length), ...field, ...type);
    parts.push(Buffer.from([2, ...leb(body.length), ...body]));
    pos = end;
  }
  return Buffer.concat(parts);
}

const scratch = mkdtempSync(join(tmpdir(), "edgebot-startup-"));
try {
  for (const { label, dir } of targets) {
    const shipped = readFileSync(join(dir, "index_bg.wasm"));
    const bytes = expandImports(shipped);
    const glue = readFileSync(join(dir, "index.js"), "utf8");
    const patched = glue
      .replace(/import\s*\{\s*WorkerEntrypoint as (\w+)\s*\}\s*from\s*"cloudflare:workers";?/, "class $1 {};")
      .replace(/import\s+(\w+)\s+from\s*"\.\/index_bg\.wasm";?/, "const $1 = globalThis.__edgebotWasmModule;");
    if (patched === glue) throw new Error(`${dir}/index.js: no imports to replace`);
    const compile = [];
    const instantiate = [];
    for (let run = 0; run < RUNS; run++) {
      const file = join(scratch, `${label}-${run}.mjs`);
      writeFileSync(file, patched);
      let start = performance.now();
      globalThis.__edgebotWasmModule = await WebAssembly.compile(bytes);
      compile.push(performance.now() - start);
      start = performance.now();
      await import(pathToFileURL(file).href);
      instantiate.push(performance.now() - start);
    }
    const total = compile.map((ms, i) => ms + instantiate[i]);
    // `gzip -9`, as scripts/bundle-report.mjs counts it (zlib's level 9 differs).
    const gzipped = Number(execFileSync("sh", ["-c", `gzip -9c '${join(dir, "index_bg.wasm")}' | wc -c`]).toString().trim());
    console.log(
      `startup ${label.padEnd(7)} compile ${median(compile).toFixed(1).padStart(6)} ms, ` +
        `instantiate ${median(instantiate).toFixed(1).padStart(6)} ms, ` +
        `total ${median(total).toFixed(1).padStart(6)} ms (median of ${RUNS}); ` +
        `wasm ${shipped.length} bytes, ${gzipped} gzipped`,
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
