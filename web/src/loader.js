// Loads Python (Pyodide) and scalebook into the page, from the book's own files only.
//
// Opened from disk (file://) a page may not fetch() nor import() anything, but it may run
// classic <script> tags. So every file comes as a script: the binaries are embedded, gzip then
// base64, in scripts that set window.sbLiveEmbed[name] (web/build_live.py writes them).
// Pyodide itself still calls fetch() twice (the .wasm and the stdlib zip); while it starts, a
// wrapper answers exactly those two URLs from memory and passes anything else through.
// Over http the same code path runs, so a static host behaves as the disk does.
//
// window.sbLiveLoader.load(base) -> Promise<{render, marks}>, once per page:
//   render(widget, values, changed) -> the parsed JSON of scalebook.live.render_json
//   marks: performance.now() at each stage (start, scripts, decoded, python, ready)
(function () {
  "use strict";

  function addScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.async = false;
      script.onload = () => resolve();
      script.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(script);
    });
  }

  function base64Bytes(text) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  // The embedded file `name`, un-base64ed and gunzipped; the base64 string is released.
  async function embedded(name) {
    const text = window.sbLiveEmbed[name];
    delete window.sbLiveEmbed[name];
    const gz = new Blob([base64Bytes(text)]).stream();
    return new Uint8Array(await new Response(gz.pipeThrough(new DecompressionStream("gzip")))
      .arrayBuffer());
  }

  // Run pyodide.asm.js (a classic script defining globalThis._createPyodideModule) from
  // memory: loadPyodide then skips the dynamic import() a file:// page may not make.
  async function runScript(bytes) {
    const url = URL.createObjectURL(new Blob([bytes], {type: "text/javascript"}));
    try { await addScript(url); } finally { URL.revokeObjectURL(url); }
  }

  // Answer fetch(url) for the URLs in `files` ({url: [bytes, content type]}) while `body` runs.
  async function withFiles(files, body) {
    const original = window.fetch;
    window.fetch = function (input, init) {
      const url = String((input && input.url) || input);
      if (Object.prototype.hasOwnProperty.call(files, url)) {
        const [bytes, type] = files[url];
        return Promise.resolve(new Response(bytes, {headers: {"Content-Type": type}}));
      }
      return original.call(this, input, init);
    };
    try { return await body(); } finally { window.fetch = original; }
  }

  async function load(base) {
    const marks = {start: performance.now()};
    await Promise.all(["pyodide.js", "lock.js", "chart.umd.min.js", "pyodide.asm.js.js",
      "pyodide.asm.wasm.js", "stdlib.zip.js", "scalebook.zip.js"].map(f => addScript(base + f)));
    marks.scripts = performance.now();
    const [asmJs, wasm, stdlib, scalebook] = await Promise.all(
      ["pyodide.asm.js", "pyodide.asm.wasm", "stdlib.zip", "scalebook.zip"].map(embedded));
    await runScript(asmJs);
    marks.decoded = performance.now();
    const files = {};
    files[base + "pyodide.asm.wasm"] = [wasm, "application/wasm"];
    files[base + "python_stdlib.zip"] = [stdlib, "application/zip"];
    const py = await withFiles(files, () => window.loadPyodide({
      indexURL: base, lockFileContents: window.sbLiveLock, packageBaseUrl: base,
      stdout: line => console.log(line), stderr: line => console.error(line)}));
    marks.python = performance.now();
    py.FS.writeFile("/lib/scalebook.zip", scalebook);
    py.runPython("import sys; sys.path.insert(0, '/lib/scalebook.zip')");
    const renderJson = py.pyimport("scalebook.live").render_json;
    marks.ready = performance.now();
    const render = (widget, values, changed) =>
      JSON.parse(renderJson(widget, JSON.stringify(values), changed === undefined ? null : changed));
    return {render, marks, version: py.version};
  }

  let loading = null;
  window.sbLiveLoader = {
    load(base) {
      if (loading === null) loading = load(base);
      return loading;
    },
  };
})();
