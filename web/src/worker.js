// The live widgets' Python, in a Web Worker: Pyodide and scalebook run here, off the page's
// main thread, shared by every widget of the page (web/src/loader.js starts it, once).
//
// A page opened from disk (file://) may not fetch() and a worker it starts from a blob: URL
// may not importScripts() a file:// URL, so the page hands this worker the runtime's files
// as the base64 strings its <script> tags hold (gzip inside); the worker decodes them, runs
// the two scripts from blob: URLs it makes itself, and answers Pyodide's own two fetches
// (the .wasm and the stdlib zip) from memory. The decoded files are kept in IndexedDB under
// the runtime's key, so a second page (or a restart after a cancel) skips the page's scripts
// and the decoding. From disk the WebAssembly is compiled again on every page, here, off the
// main thread: Chromium refuses to store a compiled WebAssembly.Module in IndexedDB
// (DataCloneError), and its own wasm code cache serves only streamed http(s) responses. Over
// http(s) (`wasmUrl` in the start message) the .wasm is fetched from the site instead and
// compiled while it streams in, which that code cache does keep for the next page.
//
// Messages in: {type: "start", key, lock, wasmUrl (null from disk)},
// {type: "files", files: {name: base64}} (without the .wasm over http(s)),
// {type: "render", id, widget, values (JSON text), changed}.
// Messages out: {type: "need-files"}, {type: "ready", version, cache: "hit" | "miss",
// stages: {name: ms since start}}, {type: "failed", message}, {type: "result", id, json}.
"use strict";

const BASE = "https://sb-live.invalid/";  // never fetched: answered from memory below
const NAMES = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "stdlib.zip", "scalebook.zip"];
const DB = "scalebook-live";
const t0 = performance.now();
const stages = {};
let key = null;
let lock = null;
let wasmUrl = null;  // over http(s): the .wasm beside the page, fetched and compiled streaming
let renderJson = null;

function base64Bytes(text) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

async function gunzip(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function openDb() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore("runtime");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

// The decoded files stored under `key`, or null (never stored, another runtime, no IndexedDB).
async function cached(key) {
  const db = await openDb();
  return new Promise(resolve => {
    const request = db.transaction("runtime").objectStore("runtime").get("files");
    request.onsuccess = () => {
      const record = request.result;
      resolve(record && record.key === key ? record.files : null);
    };
    request.onerror = () => resolve(null);
  });
}

// One runtime is kept: storing this one replaces any older one.
async function store(key, files) {
  const db = await openDb();
  const tx = db.transaction("runtime", "readwrite");
  tx.objectStore("runtime").put({key, files}, "files");
  return new Promise(resolve => { tx.oncomplete = tx.onerror = () => resolve(); });
}

function runScript(bytes) {
  const url = URL.createObjectURL(new Blob([bytes], {type: "text/javascript"}));
  try { importScripts(url); } finally { URL.revokeObjectURL(url); }
}

async function boot(files, cache) {
  stages.decoded = performance.now() - t0;
  runScript(files["pyodide.js"]);
  runScript(files["pyodide.asm.js"]);  // defines _createPyodideModule: loadPyodide skips its import
  const answers = {
    [BASE + "python_stdlib.zip"]: [files["stdlib.zip"], "application/zip"],
  };
  if (!wasmUrl) answers[BASE + "pyodide.asm.wasm"] = [files["pyodide.asm.wasm"], "application/wasm"];
  const original = self.fetch;
  self.fetch = function (input, init) {
    const url = String((input && input.url) || input);
    // the real file, streamed: Pyodide compiles it with instantiateStreaming as it arrives
    if (wasmUrl && url === BASE + "pyodide.asm.wasm") return original.call(self, wasmUrl);
    if (Object.prototype.hasOwnProperty.call(answers, url)) {
      const [bytes, type] = answers[url];
      return Promise.resolve(new Response(bytes, {headers: {"Content-Type": type}}));
    }
    return Promise.reject(new Error("the live widgets fetch nothing: " + url));
  };
  let py;
  try {
    py = await self.loadPyodide({indexURL: BASE, lockFileContents: lock, packageBaseUrl: BASE,
      stdout: line => console.log(line), stderr: line => console.error(line)});
  } finally {
    self.fetch = original;
  }
  stages.python = performance.now() - t0;
  py.FS.writeFile("/lib/scalebook.zip", files["scalebook.zip"]);
  py.runPython("import sys; sys.path.insert(0, '/lib/scalebook.zip')");
  renderJson = py.pyimport("scalebook.live").render_json;
  stages.ready = performance.now() - t0;
  postMessage({type: "ready", version: py.version, cache, stages});
}

function fail(error) {
  postMessage({type: "failed", message: String((error && error.message) || error)});
}

onmessage = event => {
  const message = event.data;
  if (message.type === "start") {
    key = message.key;
    lock = message.lock;
    wasmUrl = message.wasmUrl || null;
    cached(key).catch(() => null).then(files => {
      if (files) return boot(files, "hit");
      postMessage({type: "need-files"});
    }).catch(fail);
  } else if (message.type === "files") {
    stages.files = performance.now() - t0;
    const names = NAMES.filter(name => name in message.files);  // no .wasm over http(s)
    Promise.all(names.map(name => gunzip(base64Bytes(message.files[name])))).then(decoded => {
      const files = Object.fromEntries(names.map((name, i) => [name, decoded[i]]));
      store(key, files).catch(() => {});  // a page without IndexedDB still runs
      return boot(files, "miss");
    }).catch(fail);
  } else if (message.type === "render") {
    let json;
    try {
      json = renderJson(message.widget, message.values, message.changed);
    } catch (error) {  // scalebook.live.render catches everything: this is Pyodide failing
      const lines = String(error.message || error).trim().split("\n");
      json = JSON.stringify({error: "Python failed: " + lines[lines.length - 1].slice(0, 300)});
    }
    postMessage({type: "result", id: message.id, json});
  }
};
