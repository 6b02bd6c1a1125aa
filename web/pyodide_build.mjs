// Build step, run by web/build_live.py with node: start the pinned Pyodide (from node_modules,
// offline) and run web/pyodide_build.py inside it, so the .pyc files it writes come from the
// same CPython (3.13) that runs them in the reader's browser.
//   node pyodide_build.mjs SCALEBOOK_SRC_ZIP OUT_DIR
import { loadPyodide } from "pyodide";
import fs from "node:fs";
import path from "node:path";

const [srcZip, outDir] = process.argv.slice(2);
const here = path.dirname(new URL(import.meta.url).pathname);
const py = await loadPyodide();
py.FS.writeFile("/tmp/scalebook-src.zip", fs.readFileSync(srcZip));
py.FS.writeFile("/tmp/pyodide_build.py", fs.readFileSync(path.join(here, "pyodide_build.py")));
py.FS.mkdirTree("/tmp/out");
try {
  py.runPython(`
import runpy, sys
sys.argv = ["pyodide_build.py", "/tmp/scalebook-src.zip", "/tmp/out"]
runpy.run_path("/tmp/pyodide_build.py", run_name="__main__")
`);
} catch (error) {  // a Python traceback: print it alone, not node's dump of pyodide.asm.js
  console.error(error.message);
  process.exit(1);
}
fs.mkdirSync(outDir, { recursive: true });
for (const name of py.FS.readdir("/tmp/out")) {
  if (name === "." || name === "..") continue;
  fs.writeFileSync(path.join(outDir, name), py.FS.readFile(`/tmp/out/${name}`));
}
console.log(`pyodide ${py.version}: wrote ${py.FS.readdir("/tmp/out").length - 2} files to ${outDir}`);
