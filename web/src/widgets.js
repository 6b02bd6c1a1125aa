// The book's live widgets: each <div class="sb-live"> that scalebook/widgets/live_html.py
// wrote holds the widget's static figure, its numbers and its controls (hidden). This script
// shows the controls; on the first touch it loads Python (loader.js, once per page), and on
// every change it asks the widget's scalebook.live module for what to show and draws it.
// No number is computed here: values go to Python as they are read from the inputs, and the
// chart draws exactly the points, ticks and texts Python returned (scalebook/live/chart.py).
//
// For tests and the benchmark each widget element gets `sbLive`: {state: "static" |
// "loading" | "live" | "failed", last: {values, changed, result} of the last redraw,
// timings: {touch, ready}, redraws: [ms per redraw], charts: [Chart]}; window.sbLiveMarks
// holds the loader's marks.
(function () {
  "use strict";
  const base = document.currentScript.src.replace(/[^/]*$/, "");

  function addScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = () => resolve();
      script.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(script);
    });
  }

  let runtime = null;
  function loadRuntime() {
    if (runtime === null) {
      runtime = addScript(base + "loader.js").then(() => window.sbLiveLoader.load(base))
        .then(rt => { window.sbLiveMarks = rt.marks; return rt; });
    }
    return runtime;
  }

  // ---------------------------------------------------------------- control values

  // A number printed with a d3/Python format spec such as ",.0f", ".2f", "d" or ".3g".
  function formatNumber(value, spec) {
    const m = /^(,)?(?:\.(\d+))?([dfeg%])?$/.exec(spec || "");
    if (!m) return String(value);
    const [, comma, digits, type] = m;
    const grouping = comma === ",";
    if (type === "e") return value.toExponential(digits === undefined ? 6 : +digits);
    if (type === "g") return String(Number(value.toPrecision(digits === undefined ? 6 : +digits)));
    const fraction = type === "d" ? 0 : digits === undefined ? 6 : +digits;
    const scaled = type === "%" ? value * 100 : value;
    return scaled.toLocaleString("en-US", {useGrouping: grouping, minimumFractionDigits: fraction,
      maximumFractionDigits: fraction}) + (type === "%" ? "%" : "");
  }

  // The value of control `spec` from its input, as the ipywidget would hold it; throws an
  // Error with a message for the reader when a free text field is not a number.
  function readControl(form, spec) {
    const field = form.elements[spec.name];
    switch (spec.kind) {
      case "select": case "selectslider": return spec.options[+field.value][1];
      case "multiselect":
        return [...field.selectedOptions].map(option => spec.options[+option.value][1]);
      case "checkbox": return field.checked;
      case "logslider": return Math.pow(spec.base, +field.value);
      case "slider": return +field.value;
      case "int": case "float": {
        const text = field.value.trim();
        const value = Number(text);
        if (text === "" || !Number.isFinite(value) || (spec.kind === "int" && !Number.isInteger(value)))
          throw new Error(`${spec.label}: enter ${spec.kind === "int" ? "a whole number" : "a number"}`);
        return value;
      }
      default: return field.value;
    }
  }

  // Set control `spec`'s input to `value` (a preset filling its fields, say).
  function writeControl(form, spec, value) {
    const field = form.elements[spec.name];
    const index = v => spec.options.findIndex(option => JSON.stringify(option[1]) === JSON.stringify(v));
    switch (spec.kind) {
      case "select": case "selectslider": field.value = String(index(value)); break;
      case "multiselect": {
        const chosen = value.map(v => String(index(v)));
        for (const option of field.options) option.selected = chosen.includes(option.value);
        break;
      }
      case "checkbox": field.checked = !!value; break;
      case "logslider": field.value = String(Math.log(value) / Math.log(spec.base)); break;
      default: field.value = String(value);
    }
  }

  function showReadout(form, spec) {
    if (!["logslider", "slider", "selectslider"].includes(spec.kind)) return;
    const field = form.elements[spec.name];
    const output = field.parentElement.querySelector("output");
    if (!output) return;
    output.textContent = spec.kind === "selectslider" ? spec.options[+field.value][0]
      : formatNumber(readControl(form, spec), spec.format);
  }

  // ---------------------------------------------------------------- drawing

  function scaleOptions(axis, position) {
    const type = {log: "logarithmic", linear: "linear", category: "category"}[axis.scale];
    const options = {type, position, title: {display: !!axis.label, text: axis.label},
      grid: {display: axis.scale !== "category" && position !== "right",
        color: "rgba(0, 0, 0, 0.12)"},
      // category labels turn (as far as upright) only where they would overlap
      ticks: {autoSkip: false, maxRotation: axis.scale === "category" ? 90 : 0}};
    if (axis.scale !== "category") Object.assign(options, {min: axis.min, max: axis.max});
    if (axis.ticks) {
      const labels = new Map(axis.ticks.map(([value, text]) => [value, text]));
      options.afterBuildTicks = scale => { scale.ticks = axis.ticks.map(([value]) => ({value})); };
      options.ticks.callback = value => labels.has(value) ? labels.get(value) : "";
    }
    return options;
  }

  function dataset(series) {
    const xy = (series.points || []).map(([x, y]) => ({x, y}));
    const yAxisID = series.axis || "y";
    switch (series.kind) {
      case "line":
        return {data: xy, yAxisID, showLine: true, label: series.label || "",
          borderColor: series.colour, backgroundColor: series.colour, borderWidth: series.width,
          borderDash: series.dash || [], pointRadius: 0, fill: false,
          sbLegend: !!series.label};
      case "points":
        return {data: xy, yAxisID, showLine: false, label: "", pointRadius: series.size / 2,
          backgroundColor: series.colour, borderColor: "#000", borderWidth: 1, sbLegend: false};
      case "bars":  // texts above each bar, or after its end when the bars are horizontal
        return {data: series.values, label: "", backgroundColor: series.colours,
          borderColor: "#000", borderWidth: 0.5, barPercentage: 0.7, categoryPercentage: 1,
          sbTexts: series.texts, sbLegend: false, sbTextStyle: series.horizontal
            ? {align: "left", baseline: "middle", dx: 3, dy: 0}
            : {align: "center", baseline: "bottom", dx: 0, dy: -2}};
      case "annotations":
        return {data: xy, yAxisID, showLine: false, label: "", pointRadius: 0,
          sbTexts: series.texts, sbLegend: false, sbTextStyle: {align: series.align,
            baseline: "bottom", dx: 0, dy: 0, colour: series.colour, size: series.size}};
      case "area":  // a closed polygon, filled, no outline
        return {data: xy, yAxisID, showLine: true, label: series.label || "", fill: "shape",
          backgroundColor: series.colour, borderColor: series.colour, borderWidth: 0,
          pointRadius: 0, sbLegend: !!series.label};
      default: throw new Error("unknown series kind " + series.kind);
    }
  }

  // Prints each text of a dataset with `sbTexts` at its element (a bar's end, a point), as
  // the matplotlib figure annotates its bars and writes its labels.
  const barTexts = {
    id: "sbBarTexts",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      chart.data.datasets.forEach((set, i) => {
        if (!set.sbTexts) return;
        const style = set.sbTextStyle;
        ctx.save();
        ctx.font = `${style.size || 11}px sans-serif`;
        ctx.fillStyle = style.colour || "#000";
        ctx.textAlign = style.align;
        ctx.textBaseline = style.baseline;
        chart.getDatasetMeta(i).data.forEach((element, j) =>
          ctx.fillText(set.sbTexts[j], element.x + style.dx, element.y + style.dy));
        ctx.restore();
      });
    },
  };

  // The labelled series' legend inside the plot, in the corner matplotlib's `loc` names
  // ("upper left", "lower right", ...; "center" otherwise), without a frame: a line (or a
  // filled box, for an area) before each label, in series order.
  const insideLegend = {
    id: "sbLegend",
    afterDatasetsDraw(chart, args, options) {
      const items = chart.data.datasets.filter(set => set.sbLegend);
      if (!options.loc || !items.length) return;
      const {ctx, chartArea: area} = chart;
      const row = 13, swatch = 18, gap = 4, pad = 5;
      ctx.save();
      ctx.font = "10px sans-serif";
      ctx.textBaseline = "middle";
      const width = swatch + gap + Math.max(...items.map(set => ctx.measureText(set.label).width));
      const height = row * items.length;
      const x = options.loc.includes("right") ? area.right - pad - width
        : options.loc.includes("left") ? area.left + pad : (area.left + area.right - width) / 2;
      let y = options.loc.includes("upper") ? area.top + pad
        : options.loc.includes("lower") ? area.bottom - pad - height : (area.top + area.bottom - height) / 2;
      for (const set of items) {
        const middle = y + row / 2;
        if (set.fill === "shape") {
          ctx.fillStyle = set.backgroundColor;
          ctx.fillRect(x, middle - 4, swatch, 8);
        } else {
          ctx.strokeStyle = set.borderColor;
          ctx.lineWidth = set.borderWidth;
          ctx.setLineDash(set.borderDash || []);
          ctx.beginPath();
          ctx.moveTo(x, middle);
          ctx.lineTo(x + swatch, middle);
          ctx.stroke();
          ctx.setLineDash([]);
        }
        ctx.fillStyle = "#000";
        ctx.fillText(set.label, x + swatch + gap, middle);
        y += row;
      }
      ctx.restore();
    },
  };

  function chartConfig(panel, aspect) {
    const bars = panel.series.some(s => s.kind === "bars");
    const horizontal = panel.series.some(s => s.kind === "bars" && s.horizontal);
    // Chart.js paints the first dataset last (on top); `order` makes later series paint over
    // earlier ones, as matplotlib does and chart.py promises.
    const datasets = panel.series.map((s, i) => ({...dataset(s), order: panel.series.length - i}));
    return {
      type: bars ? "bar" : "scatter",
      data: {labels: (horizontal ? panel.y : panel.x).categories || undefined, datasets},
      options: {
        animation: false, responsive: true, maintainAspectRatio: true, aspectRatio: aspect,
        events: [], parsing: bars ? undefined : false, indexAxis: horizontal ? "y" : "x",
        scales: {x: scaleOptions(panel.x, "bottom"), y: scaleOptions(panel.y, "left"),
          ...(panel.y2 ? {y2: scaleOptions(panel.y2, "right")} : {})},
        plugins: {
          title: {display: false},
          legend: {display: false},
          sbLegend: {loc: panel.legend},
          tooltip: {enabled: false},
        },
      },
      plugins: [barTexts, insideLegend],
    };
  }

  // Draw `spec` (scalebook/live/chart.py) into `box`: one cell per panel, its title as text
  // (it wraps where the page is narrow) over a canvas. The charts already there are reused
  // when the panels keep their kind; returns the charts.
  function drawChart(box, spec, charts) {
    const shares = spec.panels.map(panel => panel.width || 1);
    const total = shares.reduce((a, b) => a + b, 0);
    const configs = spec.panels.map((panel, i) =>
      chartConfig(panel, spec.width * shares[i] / total / spec.height));
    const reusable = charts.length === configs.length &&
      charts.every((chart, i) => chart.config.type === configs[i].type);
    if (!reusable) {
      charts.forEach(chart => chart.destroy());
      box.replaceChildren();
      charts = configs.map(config => {
        const cell = document.createElement("div");
        cell.className = "sb-live-panel";
        const title = document.createElement("div");
        title.className = "sb-live-title";
        const canvas = document.createElement("canvas");
        cell.append(title, canvas);
        box.appendChild(cell);
        return new window.Chart(canvas, config);
      });
    } else {
      charts.forEach((chart, i) => {
        chart.data = configs[i].data;
        chart.options = configs[i].options;
        chart.update("none");
      });
    }
    charts.forEach((chart, i) => {
      chart.canvas.parentElement.querySelector(".sb-live-title").textContent = spec.panels[i].title;
      chart.canvas.parentElement.style.flexGrow = String(shares[i]);
    });
    return charts;
  }

  // The figure's own lines of text (scalebook/live/chart.py `text`), one div each.
  function drawTexts(box, texts) {
    box.replaceChildren(...texts.map(t => {
      const line = document.createElement("div");
      line.textContent = t.text;
      line.style.color = t.colour;
      if (t.bold) line.style.fontWeight = "bold";
      return line;
    }));
  }

  // ---------------------------------------------------------------- one widget

  function setMessage(root, text, error) {
    const box = root.querySelector(".sb-live-message");
    box.replaceChildren();
    if (!text) return;
    const span = document.createElement("span");
    if (error) span.style.color = "#b00020";
    span.textContent = (error ? "⚠ " : "") + text;
    box.appendChild(span);
  }

  function liven(root) {
    const widget = root.dataset.widget;
    const specs = JSON.parse(root.dataset.controls);
    const form = root.querySelector(".sb-live-controls");
    const figure = root.querySelector(".sb-live-figure");
    const state = {state: "static", last: null, timings: {}, redraws: [], charts: []};
    root.sbLive = state;
    let rt = null;
    let chartBox = null;
    let textBox = null;

    function redraw(changed) {
      const start = performance.now();
      let values;
      try {
        values = Object.fromEntries(specs.filter(spec => spec.kind !== "button")
          .map(spec => [spec.name, readControl(form, spec)]));
      } catch (error) {
        setMessage(root, error.message, true);
        return;
      }
      const result = rt.render(widget, values, changed);
      for (const [name, value] of Object.entries(result.controls || {})) {  // even with an error
        const spec = specs.find(s => s.name === name);
        writeControl(form, spec, value);
        showReadout(form, spec);
      }
      if (result.error) {  // keep the last good picture, as the Jupyter widget does
        setMessage(root, result.error, true);
      } else {
        setMessage(root, "", false);
        if (chartBox === null) {
          textBox = document.createElement("div");
          textBox.className = "sb-live-texts";
          chartBox = document.createElement("div");
          chartBox.className = "sb-live-chart";
          figure.replaceChildren(textBox, chartBox);
        }
        drawTexts(textBox, result.chart.texts || []);
        state.charts = drawChart(chartBox, result.chart, state.charts);
        root.querySelector(".sb-live-summary").innerHTML = result.summary_html;
      }
      state.last = {values, changed, result};
      state.redraws.push(performance.now() - start);
    }

    function touch() {
      if (state.state !== "static") return;
      state.state = "loading";
      state.timings.touch = performance.now();
      root.classList.add("sb-live-loading");
      setMessage(root, "loading Python…", false);
      loadRuntime().then(loaded => {
        rt = loaded;
        state.state = "live";
        state.timings.ready = performance.now();
        root.classList.remove("sb-live-loading");
        redraw(null);
        if (queued !== null) press(queued);
      }, error => {
        state.state = "failed";
        root.classList.remove("sb-live-loading");
        setMessage(root, "could not start Python: " + error.message, true);
        console.error(error);
      });
    }

    // A button's action (a search, say) may take a while: say so, let the page paint the
    // message, then redraw with the button as the changed control. A button pressed while
    // Python loads runs once it is ready.
    let queued = null;
    function press(spec) {
      queued = null;
      if (state.state !== "live") {
        queued = spec;
        touch();
        return;
      }
      root.classList.add("sb-live-loading");
      setMessage(root, spec.label + "…", false);
      requestAnimationFrame(() => setTimeout(() => {
        root.classList.remove("sb-live-loading");
        redraw(spec.name);
      }, 0));
    }

    function changed(event) {
      const spec = specs.find(s => s.name === event.target.name);
      if (!spec) return;
      showReadout(form, spec);
      if (state.state === "live") redraw(spec.name);
      else touch();
    }

    const onCommit = new Set(["int", "float", "text"]);
    form.addEventListener("input", event => {
      const spec = specs.find(s => s.name === event.target.name);
      if (spec && !onCommit.has(spec.kind)) changed(event);
    });
    form.addEventListener("change", event => {
      const spec = specs.find(s => s.name === event.target.name);
      if (spec && onCommit.has(spec.kind)) changed(event);
    });
    form.addEventListener("click", event => {
      const spec = specs.find(s => s.name === event.target.name && s.kind === "button");
      if (spec) press(spec);
    });
    form.addEventListener("submit", event => event.preventDefault());
    for (const type of ["pointerdown", "focusin", "keydown"]) form.addEventListener(type, touch);
    form.hidden = false;
  }

  function livenAll() { document.querySelectorAll(".sb-live").forEach(liven); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", livenAll);
  else livenAll();
})();
