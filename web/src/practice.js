// The book's practice blocks: each <section class="practice"> that scalebook/widgets/practice.py
// wrote holds a problem with the book's numbers and its answer form (hidden). This script shows
// the form; on the first touch it starts Python in the page's Web Worker (loader.js, shared
// with the live widgets), and each click asks scalebook.live.practice for what to show:
// "New numbers" (a fresh random seed), "Check" (each field's verdict, the grader's message
// and hints), "Show the solution". Every piece of text and HTML comes from Python; this file
// holds no formula, tolerance or hint, only where things go.
//
// The running score of a chapter (.practice-score) lives in localStorage under
// "scalebook-practice:<chapter>": {<problem id>: {checks, solved}}; a problem counts as solved
// when one check had every field right. Nothing leaves the page.
//
// For tests and the benchmark each block gets `sbPractice`: {state: "static" | "loading" |
// "live" | "failed", busy, done (answers drawn), seed, last (the view's last answer),
// timings: [{action, ms}] from the click to the answer drawn}.
(function () {
  "use strict";
  const base = document.currentScript.src.replace(/[^/]*$/, "");
  const VIEW = "scalebook.live.practice";
  const MAX_SEED = 999999999;  // scalebook.live.practice.MAX_SEED

  let loaderScript = null;
  function loadRuntime() {
    if (loaderScript === null) {
      // one loader per page, shared with widgets.js (it may be adding the same script now)
      loaderScript = window.sbLiveLoader ? Promise.resolve() : new Promise((resolve, reject) => {
        const adding = [...document.scripts].find(s => s.src === base + "loader.js");
        const script = adding || document.createElement("script");
        script.addEventListener("load", () => resolve());
        script.addEventListener("error", () => reject(new Error("could not load " + script.src)));
        if (!adding) {
          script.src = base + "loader.js";
          document.head.appendChild(script);
        }
      });
    }
    return loaderScript.then(() => window.sbLiveLoader.load(base));
  }
  window.sbPracticeRuntime = loadRuntime;  // tests and the benchmark drive the view directly

  // ---------------------------------------------------------------- the score

  function storeKey(chapter) { return "scalebook-practice:" + chapter; }

  function readScore(chapter) {
    try {
      const value = JSON.parse(window.localStorage.getItem(storeKey(chapter)) || "{}");
      return value && typeof value === "object" ? value : {};
    } catch (error) {
      return {};
    }
  }

  function writeScore(chapter, score) {
    try { window.localStorage.setItem(storeKey(chapter), JSON.stringify(score)); } catch (e) { /* private mode */ }
  }

  function record(chapter, problem, solved) {
    const score = readScore(chapter);
    const entry = score[problem] || {checks: 0, solved: false};
    entry.checks += 1;
    entry.solved = entry.solved || solved;
    score[problem] = entry;
    writeScore(chapter, score);
    showScores();
  }

  function showScores() {
    for (const box of document.querySelectorAll(".practice-score")) {
      const ids = box.dataset.problems.split(" ").filter(Boolean);
      const score = readScore(box.dataset.chapter);
      const solved = ids.filter(id => score[id] && score[id].solved).length;
      const checks = ids.reduce((n, id) => n + ((score[id] && score[id].checks) || 0), 0);
      box.querySelector(".practice-score-text").textContent =
        `Your score: ${solved} of ${ids.length} problems solved (${checks} checks).`;
      box.hidden = false;
    }
  }

  // ---------------------------------------------------------------- one block

  function setStatus(root, text, kind) {
    const status = root.querySelector(".practice-status");
    status.textContent = text;
    status.className = "practice-status" + (kind ? " practice-" + kind : "");
  }

  function values(root, seed) {
    const out = {problem: root.dataset.problem, seed};
    for (const input of root.querySelectorAll(".practice-fields input")) out[input.name] = input.value;
    return out;
  }

  function draw(root, action, out) {
    const state = root.sbPractice;
    if (out.error) {
      setStatus(root, "⚠ " + out.error, "error");
      return;
    }
    setStatus(root, "", "");
    if (action === "seed") {
      root.querySelector(".practice-question").innerHTML = out.summary_html;
      root.querySelector(".practice-fields").innerHTML = out.fields_html;
      root.querySelector(".practice-solution").innerHTML = "";
      state.seed = out.seed;
      const first = root.querySelector(".practice-fields input");
      if (first && state.focusFirst) first.focus();
    }
    for (const result of out.results) {
      const verdict = root.querySelector(`.practice-verdict[data-answer="${result.answer}"]`);
      if (verdict) verdict.innerHTML = result.html;
      const input = root.querySelector(`.practice-fields input[name="${result.answer}"]`);
      if (input) input.setAttribute("aria-invalid", result.passed ? "false" : "true");
    }
    if (out.solution_html) root.querySelector(".practice-solution").innerHTML = out.solution_html;
    if (action === "check" && out.results.length) {
      const typed = out.results.some(r => r.message !== "no answer yet");
      if (typed) record(root.dataset.chapter, root.dataset.problem, out.results.every(r => r.passed));
    }
  }

  function act(root, action) {
    const state = root.sbPractice;
    if (state.busy) return;  // one request at a time per block; the click is not lost silently
    const clicked = performance.now();
    const seed = action === "seed" ? 1 + Math.floor(Math.random() * MAX_SEED) : state.seed;
    state.busy = true;
    if (state.state !== "live") {
      state.state = "loading";
      setStatus(root, "Starting Python in your browser (a few seconds, the first time)…", "loading");
    }
    loadRuntime()
      .then(runtime => { state.state = "live"; return runtime.render(VIEW, values(root, seed), action); })
      .then(out => {
        draw(root, action, out);
        state.last = out;
        state.done += 1;
        state.timings.push({action, ms: performance.now() - clicked});
      }, error => {
        state.state = "failed";
        setStatus(root, "⚠ Python could not start in this browser: " + error.message, "error");
        state.done += 1;
      })
      .finally(() => { state.busy = false; });
  }

  function hydrate(root) {
    root.sbPractice = {state: "static", busy: false, done: 0, seed: 0, last: null, timings: [],
      focusFirst: false};
    const form = root.querySelector(".practice-form");
    form.hidden = false;
    form.addEventListener("submit", event => { event.preventDefault(); act(root, "check"); });
    form.querySelector("[name=new]").addEventListener("click", () => {
      root.sbPractice.focusFirst = true;
      act(root, "seed");
    });
    form.querySelector("[name=solution]").addEventListener("click", () => act(root, "solution"));
    // start Python on the first touch, so the first click is answered sooner
    const warm = () => { loadRuntime().catch(() => {}); };
    form.addEventListener("focusin", warm, {once: true});
    form.addEventListener("pointerdown", warm, {once: true});
  }

  function start() {
    for (const root of document.querySelectorAll("section.practice[data-problem]")) hydrate(root);
    for (const button of document.querySelectorAll(".practice-score .practice-reset")) {
      button.addEventListener("click", () => {
        const chapter = button.closest(".practice-score").dataset.chapter;
        try { window.localStorage.removeItem(storeKey(chapter)); } catch (e) { /* private mode */ }
        showScores();
      });
    }
    showScores();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
