// The conformance suite's "client": `conformance client --command "node
// tests/harness/mcp_driver.mjs <dir>" --scenario <name>` runs it with the
// scenario server's URL last. The client under test is the Worker, which the
// e2e test (tests/mcp_conformance.rs) drives: this script hands the URL over
// (`<dir>/url`) and waits until the test says the Worker is done (`<dir>/done`,
// holding the exit code), so the suite reads its checks only after that.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [dir, url] = process.argv.slice(2);
writeFileSync(join(dir, "url.tmp"), url);
renameSync(join(dir, "url.tmp"), join(dir, "url"));
const started = Date.now();
const timer = setInterval(() => {
  const done = join(dir, "done");
  if (existsSync(done)) {
    clearInterval(timer);
    process.exit(Number(readFileSync(done, "utf8").trim() || "0"));
  }
  if (Date.now() - started > 170_000) {
    clearInterval(timer);
    console.error("the test never said it was done");
    process.exit(2);
  }
}, 100);
