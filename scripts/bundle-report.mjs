#!/usr/bin/env node
// `make bench`: who owns the Worker's wasm, so a growth has an owner.
//
// Reads build/index_bg.names.wasm, the final wasm before the Makefile strips its
// "name" section (the same code as build/index_bg.wasm), and prints the bytes per
// crate with each crate's estimated share of the gzipped bundle, then the largest
// functions. wasm-opt inlines each async entry point's whole future into a
// wrapper (js_sys::futures::future_to_promise, Pin<Box<..>>::poll), so the
// largest functions are listed a second time as compiled, from the cargo output
// run through wasm-bindgen alone, where router::handle and friends still carry
// their own names. Last line: the shipped wasm's size and gzipped size.
//
//   node scripts/bundle-report.mjs [NAMED_WASM] [SHIPPED_WASM] [CARGO_WASM]
//
// Nothing to install: a small reader for the sections it needs (import, code,
// data, and the function names of the "name" custom section).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const [
  named = "build/index_bg.names.wasm",
  shipped = "build/index_bg.wasm",
  compiled = "target/wasm32-unknown-unknown/release/edgebot.wasm",
] = process.argv.slice(2);
const TOP_CRATES = 16;
const TOP_FUNCTIONS = 15;

function reader(buf, pos) {
  return {
    pos,
    byte() {
      return buf[this.pos++];
    },
    u32() {
      let result = 0;
      for (let shift = 0; ; shift += 7) {
        const b = buf[this.pos++];
        result += (b & 0x7f) * 2 ** shift;
        if (!(b & 0x80)) return result;
      }
    },
    name() {
      const length = this.u32();
      this.pos += length;
      return buf.toString("utf8", this.pos - length, this.pos);
    },
    limits() {
      const flags = this.byte();
      this.u32();
      if (flags & 1) this.u32();
    },
  };
}

// Sections (payloads), function bodies with their names, and the data segment count.
function parse(buf) {
  if (buf.readUInt32LE(0) !== 0x6d736100) throw new Error("not a wasm module");
  const r = reader(buf, 8);
  const sections = [];
  const bodies = [];
  const names = new Map();
  let imported = 0;
  let segments = 0;
  while (r.pos < buf.length) {
    const id = r.byte();
    const size = r.u32();
    const end = r.pos + size;
    const s = reader(buf, r.pos);
    const custom = id === 0 ? s.name() : null;
    sections.push({ id, custom, bytes: buf.subarray(r.pos, end) });
    if (id === 2) {
      for (let n = s.u32(); n > 0; n--) {
        s.name();
        s.name();
        const kind = s.byte();
        if (kind === 0) {
          s.u32();
          imported++;
        } else if (kind === 1) {
          s.byte();
          s.limits();
        } else if (kind === 2) s.limits();
        else if (kind === 3) s.pos += 2;
        else if (kind === 4) {
          s.byte();
          s.u32();
        } else throw new Error(`unknown import kind ${kind}`);
      }
    } else if (id === 10) {
      for (let n = s.u32(); n > 0; n--) {
        const length = s.u32();
        bodies.push(buf.subarray(s.pos, s.pos + length));
        s.pos += length;
      }
    } else if (id === 11) {
      segments = s.u32();
    } else if (custom === "name") {
      while (s.pos < end) {
        const subsection = s.byte();
        const subsectionEnd = s.u32() + s.pos;
        if (subsection === 1) {
          for (let n = s.u32(); n > 0; n--) {
            const index = s.u32();
            names.set(index, s.name());
          }
        }
        s.pos = subsectionEnd;
      }
    }
    r.pos = end;
  }
  const funcs = bodies.map((bytes, i) => ({ name: names.get(imported + i) ?? `func[${imported + i}]`, bytes }));
  return { sections, funcs, segments, named: names.size > 0 };
}

// Generic wrappers that wasm-opt fills with a whole future of ours.
const ASYNC_WRAPPERS =
  /^(js_sys::futures::future_to_promise::|wasm_bindgen_futures::|<core::pin::Pin<P> as core::future::future::Future>::poll|<core::panic::unwind_safe::AssertUnwindSafe<F> as core::future::future::Future>::poll)/;

// The crate a function's code belongs to: the leading path of its name, the
// implementing type's for `<T as Trait>::f`, the dropped type's for drop glue.
function crateOf(name) {
  if (ASYNC_WRAPPERS.test(name)) return "edgebot async (inlined in wrappers)";
  let n = name;
  for (;;) {
    const drop = /^(?:core|std|alloc)(?:\[[0-9a-f]+\])?::ptr::drop_in_place<(.*)>$/.exec(n);
    if (drop) n = drop[1];
    else if (/^(<|&|\*const |\*mut |mut |dyn |\[|\()/.test(n)) n = n.replace(/^(<|&|\*const |\*mut |mut |dyn |\[|\()/, "");
    else break;
  }
  const path = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[[0-9a-f]+\])?::/.exec(n);
  if (path) return ["core", "alloc", "std"].includes(path[1]) ? "core/alloc/std" : path[1];
  if (/^func\[\d+\]$/.test(name)) return "(unnamed)";
  return "(wasm-bindgen glue, runtime)"; // generated shims and exports, memcpy & co.
}

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`.padStart(10);
const shorten = (name) => (name.length > 116 ? `${name.slice(0, 113)}...` : name);

function largest(funcs, title) {
  console.log(`\n${title}`);
  for (const f of [...funcs].sort((a, b) => b.bytes.length - a.bytes.length).slice(0, TOP_FUNCTIONS)) {
    console.log(`${kib(f.bytes.length)}  ${shorten(f.name)}`);
  }
}

const shippedSize = readFileSync(shipped).length;
const shippedGzip = Number(execFileSync("sh", ["-c", `gzip -9c '${shipped}' | wc -c`]).toString().trim());

if (!existsSync(named)) {
  console.log(`\n${named} is missing: run make build`);
} else {
  const buf = readFileSync(named);
  const wasm = parse(buf);
  if (!wasm.named) console.log(`${named} has no "name" section; functions appear by index`);
  const groups = new Map();
  const add = (label, count, parts) => {
    const group = groups.get(label) ?? { label, count: 0, parts: [] };
    group.count += count;
    group.parts.push(...parts);
    groups.set(label, group);
  };
  for (const f of wasm.funcs) add(crateOf(f.name), 1, [f.bytes]);
  const payloads = (keep) => wasm.sections.filter(keep).map((s) => s.bytes);
  add("(data segments)", wasm.segments, payloads((s) => s.id === 11));
  add("(types, imports, exports, tables)", 0, payloads((s) => s.id !== 0 && s.id !== 10 && s.id !== 11));
  // Each group gzipped alone, then scaled so that the shares add up to the shipped total.
  const rows = [...groups.values()].map((g) => {
    const bytes = Buffer.concat(g.parts);
    return { label: g.label, count: g.count, size: bytes.length, gzip: gzip(bytes) };
  });
  const gzipSum = rows.reduce((sum, row) => sum + row.gzip, 0);
  rows.sort((a, b) => b.size - a.size);
  const shown = rows.slice(0, TOP_CRATES);
  const rest = rows.slice(TOP_CRATES);
  if (rest.length) {
    shown.push({
      label: `(${rest.length} more crates)`,
      count: rest.reduce((sum, row) => sum + row.count, 0),
      size: rest.reduce((sum, row) => sum + row.size, 0),
      gzip: rest.reduce((sum, row) => sum + row.gzip, 0),
    });
  }
  console.log(`\nworker wasm by crate (${named}; gzipped: each crate's estimated share)`);
  console.log(`${"crate".padEnd(38)} ${"funcs".padStart(5)} ${"size".padStart(10)} ${"gzipped".padStart(10)}  share`);
  for (const row of shown) {
    const share = (row.gzip / gzipSum) * shippedGzip;
    const percent = `${((100 * share) / shippedGzip).toFixed(1)}%`.padStart(6);
    console.log(`${row.label.padEnd(38)} ${String(row.count || "").padStart(5)} ${kib(row.size)} ${kib(share)} ${percent}`);
  }
  largest(wasm.funcs, `largest functions in the bundle`);
}

// The same code before wasm-opt, named by wasm-bindgen's demangler.
const bindgen = process.env.WASM_BINDGEN_BIN || "wasm-bindgen";
if (existsSync(compiled)) {
  const out = "target/bundle-report";
  mkdirSync(out, { recursive: true });
  try {
    execFileSync(bindgen, [compiled, "--out-dir", out, "--target", "module", "--out-name", "index", "--no-typescript"]);
    const before = parse(readFileSync(`${out}/index_bg.wasm`));
    largest(before.funcs, "largest functions as compiled (before wasm-opt inlines futures into their wrappers)");
  } catch (error) {
    console.log(`\n(no as-compiled list: ${bindgen} failed: ${error.message.split("\n")[0]})`);
  }
}

console.log(
  `\n${`worker bundle (${shipped})`.padEnd(44)} ${shippedSize} bytes, ${shippedGzip} bytes gzipped (gzip -9)`,
);
