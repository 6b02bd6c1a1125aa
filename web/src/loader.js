// Starts the live widgets' Python in a Web Worker (web/src/worker.js), once per page, and
// passes the widgets' redraws to it. Nothing Python does runs on the page's main thread.
//
// From disk (file://) a page may run classic <script> tags but may not fetch(), and the
// worker (started from a blob: URL) may not load file:// scripts either. So the worker's own
// code comes as a string (worker.js.js) and, unless the worker finds the runtime in its
// IndexedDB cache (a second page), the page loads the embedded runtime scripts (gzip then
// base64, web/build_live.py) and hands their strings to the worker, which decodes them.
// Over http(s) the same path runs, except for the WebAssembly: the worker fetches the .wasm
// file beside the page and compiles it as it streams in, which Chromium's code cache keeps
// for the next page (it caches only streamed http(s) responses; from file:// nothing can be
// kept compiled: IndexedDB refuses a WebAssembly.Module, and no fetch is allowed).
//
// window.sbLiveLoader.load(base) -> Promise<runtime>, once per page (again after cancel):
//   runtime.render(widget, values, changed) -> Promise<the parsed JSON of render_json>
//   runtime.cancel() -> stop what Python is doing (the worker is ended and started again;
//     pending renders reject with an Error whose `cancelled` is true)
//   runtime.marks: performance.now() at start, files (scripts loaded, on a cache miss) and
//     ready; runtime.cache: "hit" | "miss"; runtime.stages: the worker's own stages (ms)
(function () {
  "use strict";

  const EMBEDDED = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "stdlib.zip", "scalebook.zip"];

  function addScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = () => { script.remove(); resolve(); };
      script.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(script);
    });
  }

  // The embedded files as base64 strings, taken out of the page (the worker decodes them).
  // Each file comes in chunks (window.sbLiveChunks counts them), one script each, so that no
  // script keeps the page busy for long; they load one after another.
  async function embeddedFiles(base, skip) {
    const files = {};
    for (const name of EMBEDDED.filter(name => !skip.includes(name))) {
      const parts = [];
      for (let i = 0; i < window.sbLiveChunks[name]; i++) {
        await addScript(`${base}${name}.${i}.js`);
        parts.push(window.sbLiveEmbed[`${name}/${i}`]);
        delete window.sbLiveEmbed[`${name}/${i}`];
      }
      files[name] = parts.join("");
    }
    return files;
  }

  async function start(base) {
    const marks = {start: performance.now()};
    // Over http(s) the worker fetches the .wasm shipped beside the page and compiles it while
    // it streams in (the browser then keeps the compiled code for the next page); from disk
    // it may not fetch, and takes the embedded copy.
    const wasmUrl = /^https?:$/.test(location.protocol)
      ? new URL(base + "pyodide.asm.wasm", location.href).href : null;
    await Promise.all([addScript(base + "worker.js.js"), addScript(base + "lock.js")]);
    const url = URL.createObjectURL(new Blob([window.sbLiveWorkerSource], {type: "text/javascript"}));
    const worker = new Worker(url);
    URL.revokeObjectURL(url);
    const pending = new Map();
    let nextId = 1;
    let dead = false;
    const runtime = {
      marks,
      render(widget, values, changed) {
        if (dead) return Promise.reject(Object.assign(new Error("cancelled"), {cancelled: true}));
        const id = nextId++;
        return new Promise((resolve, reject) => {
          pending.set(id, {resolve, reject});
          worker.postMessage({type: "render", id, widget, values: JSON.stringify(values),
            changed: changed === undefined ? null : changed});
        });
      },
      cancel() {
        if (dead) return;
        dead = true;
        worker.terminate();
        loading = null;  // the next load() starts a fresh worker (the runtime is cached)
        for (const {reject} of pending.values())
          reject(Object.assign(new Error("cancelled"), {cancelled: true}));
        pending.clear();
      },
    };
    return new Promise((resolve, reject) => {
      worker.onerror = event => reject(new Error(event.message || "the Python worker failed"));
      worker.onmessage = event => {
        const message = event.data;
        if (message.type === "result") {
          const entry = pending.get(message.id);
          pending.delete(message.id);
          if (entry) entry.resolve(JSON.parse(message.json));
        } else if (message.type === "need-files") {
          embeddedFiles(base, wasmUrl ? ["pyodide.asm.wasm"] : []).then(files => {
            marks.files = performance.now();
            worker.postMessage({type: "files", files});
          }, reject);
        } else if (message.type === "ready") {
          marks.ready = performance.now();
          Object.assign(runtime, {version: message.version, cache: message.cache,
            stages: message.stages});
          resolve(runtime);
        } else if (message.type === "failed") {
          reject(new Error(message.message));
        }
      };
      worker.postMessage({type: "start", key: window.sbLiveKey, lock: window.sbLiveLock, wasmUrl});
    });
  }

  let loading = null;
  window.sbLiveLoader = {
    load(base) {
      if (loading === null) loading = start(base);
      return loading;
    },
  };
})();
