// The book's live widgets: each <div class="sb-live"> that scalebook/widgets/live_html.py
// wrote holds the widget's static figure, its numbers and its controls (hidden). This script
// shows the controls; on the first touch it starts Python in a Web Worker (loader.js, one
// worker per page, shared by its widgets), and on every change it asks the widget's
// scalebook.live module for what to show and draws it. No number is computed here: values go
// to Python as they are read from the inputs, and the chart draws exactly the points, ticks
// and texts Python returned (scalebook/live/chart.py).
//
// The main thread only reads inputs and draws. Moves are coalesced: one render at a time per
// widget, and while one runs, further moves of the same control replace each other, so a
// drag redraws at most once per render and always ends on its final value. Any error (a
// rejected input, an exception, a non-finite number: scalebook.live.render) shows as the
// widget's ⚠ message, and the last good picture stays, marked stale; no control is ever
// locked. The widget's values live in the page's URL (?sb-<name>=...), so a shared link, a
// reload and Back show the same settings and the picture that goes with them.
//
// For tests and the benchmark each widget element gets `sbLive`: {state: "static" |
// "loading" | "live" | "failed", busy (a render queued or running), done (requests
// finished, drawn or refused), last: {values, changed, result} of the last render,
// timings: {touch, ready, answered (the last answer from Python)}, redraws: [ms from the
// move to its picture], charts: [Chart] (each with sbTextBoxes: where its bar and point
// texts were written), reserved (the live picture's room is reserved, before the touch)};
// window.sbLiveMarks holds the loader's marks.
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

  let loaderScript = null;
  let chartJs = null;
  function loadRuntime() {
    if (loaderScript === null) {
      loaderScript = addScript(base + "loader.js");
      chartJs = addScript(base + "chart.umd.min.js");
    }
    return Promise.all([loaderScript.then(() => window.sbLiveLoader.load(base)), chartJs.then(warmCharts)])
      .then(([rt]) => { window.sbLiveMarks = rt.marks; return rt; });
  }

  // Chart.js compiles its code as it first runs (65-190 ms blocks on a first touch): while
  // Python starts, idle callbacks pay that on off-page charts of the widgets' kinds.
  let warmed = false;
  function warmCharts() {
    if (warmed || !window.Chart) return;
    warmed = true;
    const line = {kind: "line", points: [[1, 1], [10, 10], [100, 10]], colour: "#1f77b4",
      width: 2, dash: null, label: "warm", axis: "y"};
    const scatter = {title: "", legend: "lower right", width: 1, note: null,
      x: {scale: "log", min: 1, max: 100, label: "x", ticks: [[1, "1"], [10, "10"], [100, "100"]]},
      y: {scale: "log", min: 1, max: 100, label: "y", ticks: null},
      y2: {scale: "linear", min: 0, max: 1, label: "y2", ticks: null},
      series: [line,
        {kind: "points", points: [[3, 3]], colour: "#ff7f0e", size: 6, label: null},
        {kind: "annotations", points: [[10, 10]], texts: ["10"], colour: "#000", align: "left", size: 10},
        {kind: "area", points: [[1, 1], [2, 2], [2, 1]], colour: "#2ca02c40", label: null},
        {kind: "line", points: [[1, 0.5], [100, 0.5]], colour: "#d62728", width: 1,
          dash: [4, 2], label: null, axis: "y2"}]};
    const bars = {title: "", legend: null, width: 1, note: null,
      x: {scale: "category", label: "", ticks: null, categories: ["a", "b"]},
      y: {scale: "linear", min: 0, max: 2, label: "y", ticks: null},
      series: [{kind: "bars", values: [1, 2], colours: ["#1f77b4", "#ff7f0e"], texts: ["1", "2"],
        horizontal: false}]};
    // a bare chart first (the core alone): no step compiles all of it at once
    const steps = [() => new window.Chart(document.createElement("canvas"), {type: "scatter",
      data: {datasets: []}, options: {animation: false, responsive: false, events: []}}).destroy()];
    // the page's first formatted number loads the locale's number data (22-28 ms, measured in
    // the page), which the first axis Chart.js labels itself would pay; and the glyphs the
    // book's numbers use, in the fonts the charts draw them in
    steps.push(() => new Intl.NumberFormat("en-US", {maximumFractionDigits: 2}).format(1.25));
    steps.push(() => {
      const ctx = document.createElement("canvas").getContext("2d");
      const family = window.Chart.defaults.font.family;
      for (const font of [`normal 11px ${family}`, `normal 12px ${family}`,
        `normal bold 12px ${family}`, "11px sans-serif"]) {
        ctx.font = font;
        ctx.measureText("0123456789.,%/()+-\u2212 \u202f\u00d7\u2070\u00b9\u00b2\u00b3" +
          "\u2074\u2075\u2076\u2077\u2078\u2079\u207b kMGTPE\u00b5smB");
      }
    });
    for (const panel of [scatter, bars]) {
      const config = chartConfig(panel);
      const options = {...config.options, responsive: false, events: []};
      let chart = null;
      // its scales first, each alone and then together, a step each: Chart.js compiles its
      // first vertical log axis alone in ~30 ms here, where the whole chart at once took ~50
      const scales = Object.entries(config.options.scales || {});
      const subsets = [...scales.map(scale => [scale]),
        ...scales.slice(1).map((_, k) => scales.slice(0, k + 2))];
      for (const subset of subsets) {
        steps.push(() => new window.Chart(document.createElement("canvas"), {type: config.type,
          data: {labels: config.data.labels, datasets: []}, options: {animation: false,
            responsive: false, events: [], scales: Object.fromEntries(subset)}}).destroy());
      }
      steps.push(() => {
        const canvas = document.createElement("canvas");
        canvas.width = 320;
        canvas.height = 200;
        chart = new window.Chart(canvas, {...config, options,
          data: {labels: config.data.labels, datasets: []}});
      });
      config.data.datasets.forEach((set, i) => steps.push(() => {
        chart.data.datasets = config.data.datasets.slice(0, i + 1);
        chart.update("none");
      }));
      steps.push(() => chart.destroy());
    }
    const idle = window.requestIdleCallback
      ? run => window.requestIdleCallback(run, {timeout: 200}) : run => setTimeout(run, 0);
    const next = () => {
      const step = steps.shift();
      if (!step) {  // the bench and the tests read this mark
        performance.mark("sb-live-charts-warm");
        return;
      }
      try {
        step();
      } catch (error) {  // never an error: the real chart will say
        steps.length = 0;
        return;
      }
      idle(next);
    };
    idle(next);
  }

  // ---------------------------------------------------------------- control values

  // A number printed with a d3/Python format spec such as ",.0f", ".2f", "d" or ".3g".
  function formatNumber(value, spec) {
    const m = /^(,)?(?:\.(\d+))?([dfeg%])?$/.exec(spec || "");
    if (!m) return String(value);
    const [, comma, digits, type] = m;
    const grouping = comma === ",";
    // never "4.1e+03": a power of ten as the book writes one (formatSignificant)
    if (type === "e") return formatSignificant(value);
    if (type === "g") {
      const text = String(Number(value.toPrecision(digits === undefined ? 6 : +digits)));
      return /e/.test(text) ? formatSignificant(value) : text;
    }
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
      case "multiselect": {  // in the order chosen: those kept first, new ones after them
        const chosen = [...field.selectedOptions].map(option => spec.options[+option.value][1]);
        const key = v => JSON.stringify(v);
        const kept = (field.sbOrder || []).filter(v => chosen.some(c => key(c) === key(v)));
        return [...kept, ...chosen.filter(c => !kept.some(v => key(v) === key(c)))];
      }
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
      case "select": case "selectslider":
        if (index(value) >= 0) field.value = String(index(value));
        break;
      case "multiselect": {
        const chosen = (Array.isArray(value) ? value : []).map(v => String(index(v)));
        for (const option of field.options) option.selected = chosen.includes(option.value);
        field.sbOrder = Array.isArray(value) ? value : [];
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
    // a slider's readouts come from Python (scalebook/widgets/live_html.readouts: "4.1 × 10³",
    // one formatter); formatNumber only for a slider too long to list them
    const position = Math.round((+field.value - spec.min) / spec.step);
    output.textContent = spec.kind === "selectslider" ? spec.options[+field.value][0]
      : spec.readouts && spec.readouts[position] !== undefined ? spec.readouts[position]
      : formatNumber(readControl(form, spec), spec.format);
  }

  // ---------------------------------------------------------------- drawing

  function scaleOptions(axis, position) {
    const type = {log: "logarithmic", linear: "linear", category: "category"}[axis.scale];
    const options = {type, position, title: {display: !!axis.label, text: axis.label},
      grid: {display: axis.scale !== "category" && position !== "right",
        color: "rgba(0, 0, 0, 0.12)"},
      // category labels turn (as far as upright) only where they would overlap; numeric labels are thinned where a narrow (phone) panel has no room for them all
      ticks: {autoSkip: axis.scale !== "category", autoSkipPadding: 6,
        maxRotation: axis.scale === "category" ? 90 : 0, font: {size: 11}}};
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
  // the matplotlib figure annotates its bars and writes its labels. A text never runs out of
  // the plot area: one that would (a long bar's label past the right edge) is pulled back in
  // and written on a white box over the bar. The boxes drawn are kept in chart.sbTextBoxes
  // ({text, left, right, top, bottom}, canvas pixels) for the tests.
  const barTexts = {
    id: "sbBarTexts",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      const area = chart.chartArea;
      const boxes = [];
      chart.data.datasets.forEach((set, i) => {
        if (!set.sbTexts) return;
        const style = set.sbTextStyle;
        const size = style.size || 11;
        ctx.save();
        ctx.font = `${size}px sans-serif`;
        ctx.textBaseline = "alphabetic";
        chart.getDatasetMeta(i).data.forEach((element, j) => {
          const text = set.sbTexts[j];
          const width = ctx.measureText(text).width;
          const anchor = element.x + style.dx;
          let left = style.align === "left" ? anchor
            : style.align === "right" ? anchor - width : anchor - width / 2;
          const moved = left + width > area.right || left < area.left;
          left = Math.max(area.left + 1, Math.min(left, area.right - width - 1));
          // the baseline: under the point ("bottom") or through its middle ("middle")
          let base = style.baseline === "middle" ? element.y + size * 0.35 : element.y + style.dy;
          base = Math.max(area.top + size, Math.min(base, area.bottom - 2));
          if (moved) {
            ctx.fillStyle = "rgba(255, 255, 255, 0.9)";
            ctx.fillRect(left - 2, base - size, width + 4, size * 1.3);
          }
          ctx.fillStyle = style.colour || "#000";
          ctx.textAlign = "left";
          ctx.fillText(text, left, base);
          boxes.push({text, left, right: left + width, top: base - size, bottom: base + size * 0.3});
        });
        ctx.restore();
      });
      chart.sbTextBoxes = boxes;
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
      ctx.font = "11px sans-serif";
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

  // BEGIN formatSignificant (tests/test_figures.py runs this function in node against
  // scalebook.units.format_number on a table of values: the same rule, said in Python)
  // `value` to 3 significant figures as the book prints a number: "0.5", "243", "4096" (an
  // integer below 10^4 where rounding made an exponent), else "4.1 × 10⁵", never "4.10e+5".
  function formatSignificant(value) {
    if (Number.isNaN(value)) return "NaN";
    if (!Number.isFinite(value)) return value > 0 ? "∞" : "-∞";
    if (value < 0) return "-" + formatSignificant(-value);
    if (value === 0) return "0";
    const [mantissa, power] = value.toExponential(2).split("e");
    const exponent = +power;
    if (exponent >= -4 && exponent < 3) return String(Number(value.toPrecision(3)));
    if (value >= 1 && value < 1e4) return value.toFixed(0);
    const superscript = String(exponent).replace(/[-0-9]/g, c => "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"["-0123456789".indexOf(c)]);
    return `${Number(mantissa)}\u202f×\u202f10${superscript}`;
  }
  // END formatSignificant

  // A tooltip names the series' label (if any) and the value under the pointer: a bar's or
  // point's own text where it has one, else the value to 3 significant figures (formatSignificant).
  function tooltipLabel(item) {
    const set = item.dataset;
    const raw = item.raw;
    const value = typeof raw === "number" ? raw : raw.y;
    const x = typeof raw === "number" ? item.label : formatSignificant(Number(raw.x));
    const text = set.sbTexts ? set.sbTexts[item.dataIndex] : formatSignificant(Number(value));
    return `${set.label ? set.label + ": " : ""}${x} → ${text}`;
  }

  function chartConfig(panel) {
    const bars = panel.series.some(s => s.kind === "bars");
    const horizontal = panel.series.some(s => s.kind === "bars" && s.horizontal);
    // Chart.js paints the first dataset last (on top); `order` makes later series paint over
    // earlier ones, as matplotlib does and chart.py promises.
    const datasets = panel.series.map((s, i) => ({...dataset(s), order: panel.series.length - i}));
    return {
      type: bars ? "bar" : "scatter",
      data: {labels: (horizontal ? panel.y : panel.x).categories || undefined, datasets},
      options: {
        // the cell's height is set by sizeFrames: reserved on a wide page, readable on a phone
        animation: false, responsive: true, maintainAspectRatio: false,
        events: ["mousemove", "mouseout", "click", "touchstart", "touchmove"],
        interaction: {mode: "nearest", intersect: false},
        parsing: bars ? undefined : false, indexAxis: horizontal ? "y" : "x",
        scales: {x: scaleOptions(panel.x, "bottom"), y: scaleOptions(panel.y, "left"),
          ...(panel.y2 ? {y2: scaleOptions(panel.y2, "right")} : {})},
        plugins: {
          title: {display: false},
          legend: {display: false},
          sbLegend: {loc: panel.legend},
          tooltip: {enabled: true, filter: item => item.dataset.pointRadius !== 0 || !!item.dataset.label,
            callbacks: {label: tooltipLabel, title: () => panel.title.split("\n")[0]}},
        },
      },
      plugins: [barTexts, insideLegend],
    };
  }

  // A promise that resolves in a task of its own, after the browser had a chance to paint
  // and to handle input: long drawing work is split at these points.
  function nextTask() {
    return new Promise(resolve => setTimeout(resolve, 0));
  }

  // One panel's cell: its title, then its canvas (and the note saying why it is empty).
  function panelCell() {
    const cell = document.createElement("div");
    cell.className = "sb-live-panel";
    const title = document.createElement("div");
    title.className = "sb-live-title";
    const frame = document.createElement("div");
    frame.className = "sb-live-canvas";
    const canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    const note = document.createElement("div");  // why the plot is empty, over it
    note.className = "sb-live-note";
    note.hidden = true;
    frame.append(canvas, note);
    cell.append(title, frame);
    return cell;
  }

  // The height the live picture will take in `figure`, whose static picture is `staticHeight`
  // tall: its texts and panel titles at the book's settings (`frame`, the data-frame that
  // scalebook/widgets/live_html.py wrote) laid out unseen at the figure's width, its canvases
  // sized as sizeFrames sizes them. Reserved before the first touch, so going live moves
  // nothing below the figure.
  function liveHeight(figure, frame, staticHeight) {
    const probe = document.createElement("div");
    probe.className = "sb-live-figure";
    probe.setAttribute("aria-hidden", "true");
    probe.style.cssText = `position:absolute;visibility:hidden;left:0;top:0;width:${figure.clientWidth}px`;
    const texts = document.createElement("div");
    texts.className = "sb-live-texts";
    drawTexts(texts, frame.texts);
    const box = document.createElement("div");
    box.className = "sb-live-chart";
    box.append(...frame.titles.map((title, i) => {
      const cell = panelCell();
      cell.querySelector(".sb-live-title").textContent = title;
      cell.style.flexGrow = String(frame.widths[i] || 1);
      return cell;
    }));
    probe.append(texts, box);
    figure.parentElement.appendChild(probe);
    sizeFrames(probe, staticHeight);
    const height = probe.offsetHeight;
    probe.remove();
    return Math.max(staticHeight, height);
  }

  // Draw `spec` (scalebook/live/chart.py) into the figure's chart box: one cell per panel,
  // its title as text over a canvas; sizeFrames puts them side by side or stacks them. The
  // charts already there are reused when the panels keep their kind; a new chart is made
  // in a task of its own (the first one compiles Chart.js's code). Resolves to the charts.
  async function drawChart(figure, spec, charts, reserved) {
    const box = figure.querySelector(".sb-live-chart");
    const configs = spec.panels.map(panel => chartConfig(panel));
    const reusable = charts.length === configs.length &&
      charts.every((chart, i) => chart.config.type === configs[i].type);
    const cells = reusable ? charts.map(chart => chart.canvas.closest(".sb-live-panel"))
      : spec.panels.map(() => panelCell());
    spec.panels.forEach((panel, i) => {
      cells[i].querySelector(".sb-live-title").textContent = panel.title;
      const note = cells[i].querySelector(".sb-live-note");
      note.textContent = panel.note || "";
      note.hidden = !panel.note;
      cells[i].style.flexGrow = String(panel.width || 1);
      // the text alternative: what the panel shows; its numbers are in the summary below
      cells[i].querySelector("canvas").setAttribute("aria-label",
        `chart: ${panel.title.replace(/\n/g, " ")}` + (panel.y.label ? `; ${panel.y.label}` : "") +
        (panel.x.label ? ` against ${panel.x.label}` : "") +
        ". The numbers are in the summary below the figure.");
    });
    if (reusable) {  // sizes stay (the ResizeObserver follows the page): no layout read
      charts.forEach((chart, i) => {
        chart.data = configs[i].data;
        chart.options = configs[i].options;
        chart.update("none");
      });
      return charts;
    }
    charts.forEach(chart => chart.destroy());
    box.replaceChildren(...cells);
    sizeFrames(figure, reserved);
    // A new chart is made empty with its axes hidden, then shown its axes, then given its
    // data, each step in a task of its own: the first picture of a page costs the most
    // (Chart.js's code, the canvas, the first measure of each tick label's glyphs), and this
    // keeps each task short.
    const made = [];
    for (let i = 0; i < cells.length; i++) {
      await nextTask();
      const config = configs[i];
      const hidden = Object.fromEntries(Object.entries(config.options.scales || {})
        .map(([id, scale]) => [id, {...scale, display: false}]));
      const chart = new window.Chart(cells[i].querySelector("canvas"),
        {...config, options: {...config.options, scales: hidden},
          data: {labels: config.data.labels, datasets: []}});
      made.push(chart);
      await nextTask();
      chart.options = config.options;
      chart.update("none");
      await nextTask();
      chart.data = config.data;
      chart.update("none");
    }
    return made;
  }

  // Size the panels: stacked where the window is under 700 px wide (a phone: each panel the
  // full width, 260-340 px tall); side by side otherwise, in the
  // height reserved before the first live picture (the static image's), so going live does
  // not move the page. Returns whether a frame changed size.
  function sizeFrames(figure, reserved) {
    const box = figure.querySelector(".sb-live-chart");
    const stacked = window.innerWidth < 700;
    box.classList.toggle("sb-live-stacked", stacked);
    const texts = figure.querySelector(".sb-live-texts");
    const titles = Math.max(0, ...[...box.querySelectorAll(".sb-live-title")].map(t => t.offsetHeight));
    const height = (stacked ? Math.round(Math.min(340, Math.max(260, figure.clientWidth * 0.72)))
      : Math.max(140, Math.round(reserved - (texts ? texts.offsetHeight : 0) - titles))) + "px";
    let changed = false;
    for (const frame of box.querySelectorAll(".sb-live-canvas")) {
      if (frame.style.height !== height) {
        frame.style.height = height;
        changed = true;
      }
    }
    return changed;
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

  // The message line: "" clears it; an error gets "⚠", and says the picture is stale.
  function setMessage(root, text, kind) {
    const box = root.querySelector(".sb-live-message");
    box.replaceChildren();
    box.className = "sb-live-message" + (kind ? " sb-live-" + kind : "");
    if (!text) return;
    const span = document.createElement("span");
    span.textContent = (kind === "error" ? "⚠ " : "") + text;
    box.appendChild(span);
    return box;
  }

  // Options the view says cannot combine with the other choices: disabled, with the reason
  // as their tooltip and in their accessible description ({control: [[value, reason], ...]}).
  function markDisabled(form, specs, disabled) {
    for (const spec of specs) {
      if (!["select", "multiselect"].includes(spec.kind)) continue;
      const reasons = new Map(((disabled || {})[spec.name] || [])
        .map(([value, reason]) => [JSON.stringify(value), reason]));
      for (const option of form.elements[spec.name].options) {
        const reason = reasons.get(JSON.stringify(spec.options[+option.value][1]));
        option.disabled = reason !== undefined && !option.selected;
        if (option.disabled) option.title = reason; else option.removeAttribute("title");
      }
    }
  }

  // The URL parameter holding this widget's values: "sb-" and its module's last name, with
  // the page's index of the widget when a page has two of the same.
  function urlKey(root) {
    const same = [...document.querySelectorAll(".sb-live")]
      .filter(other => other.dataset.widget === root.dataset.widget);
    const name = "sb-" + root.dataset.widget.split(".").pop();
    return same.length > 1 ? name + "-" + same.indexOf(root) : name;
  }

  function saveToUrl(key, values, initial) {
    const changed = Object.fromEntries(Object.entries(values)
      .filter(([name, value]) => JSON.stringify(value) !== JSON.stringify(initial[name])));
    const url = new URL(location.href);
    if (Object.keys(changed).length) url.searchParams.set(key, JSON.stringify(changed));
    else url.searchParams.delete(key);
    if (url.href !== location.href) {
      try { history.replaceState(history.state, "", url.href); } catch (error) { /* file:// */ }
    }
  }

  function liven(root) {
    const widget = root.dataset.widget;
    const specs = JSON.parse(root.dataset.controls);
    const form = root.querySelector(".sb-live-controls");
    const figure = root.querySelector(".sb-live-figure");
    const summary = root.querySelector(".sb-live-summary");
    const state = {state: "static", busy: false, done: 0, last: null, timings: {}, redraws: [],
      charts: []};
    root.sbLive = state;
    // the numbers may scroll sideways on a phone: a keyboard must reach them too
    summary.tabIndex = 0;
    summary.setAttribute("role", "region");
    summary.setAttribute("aria-label", "the widget's numbers");
    const initial = Object.fromEntries(specs.filter(spec => spec.kind !== "button")
      .map(spec => [spec.name, spec.value]));
    const key = urlKey(root);
    const frame = root.dataset.frame ? JSON.parse(root.dataset.frame) : null;
    let rt = null;
    let chartBox = null;
    let textBox = null;
    let reserved = 0;
    let inFlight = false;
    const queue = [];  // [{changed, at}]: the moves not yet sent to Python, oldest first

    function values() {
      const out = Object.fromEntries(specs.filter(spec => spec.kind !== "button")
        .map(spec => [spec.name, readControl(form, spec)]));
      for (const spec of specs)  // a multiple choice keeps its order from move to move
        if (spec.kind === "multiselect") form.elements[spec.name].sbOrder = out[spec.name];
      return out;
    }

    // Show a render's result; resolves when drawn.
    async function show(result) {
      for (const [name, value] of Object.entries(result.controls || {})) {  // even with an error
        const spec = specs.find(s => s.name === name);
        if (!spec) continue;
        writeControl(form, spec, value);
        showReadout(form, spec);
      }
      markDisabled(form, specs, result.disabled);
      if (result.error) {  // keep the last good picture, marked stale
        setMessage(root, result.error + " (the picture and numbers below are for the last " +
          "settings that worked)", "error");
        root.classList.add("sb-live-stale");
        return;
      }
      if (chartBox === null) {
        reserved = figure.offsetHeight;
        figure.style.minHeight = reserved + "px";
        textBox = document.createElement("div");
        textBox.className = "sb-live-texts";
        chartBox = document.createElement("div");
        chartBox.className = "sb-live-chart";
        figure.replaceChildren(textBox, chartBox);
        new ResizeObserver(() => {
          if (sizeFrames(figure, reserved)) state.charts.forEach(chart => chart.resize());
        }).observe(figure);
      }
      drawTexts(textBox, result.chart.texts || []);
      state.charts = await drawChart(figure, result.chart, state.charts, reserved);
      summary.innerHTML = result.summary_html;
      setMessage(root, "", null);
      root.classList.remove("sb-live-stale");
    }

    // Send the oldest queued move to Python, draw its answer, then the next. One render at a
    // time: moves that come meanwhile wait in the queue, where a move of the control the
    // last queued move moved replaces it (a drag), so the final value is always drawn.
    function pump() {
      if (inFlight || rt === null) return;
      const move = queue.shift();
      if (!move) {
        state.busy = false;
        return;
      }
      state.busy = true;
      let current;
      try {
        current = values();
      } catch (error) {  // a typed field that is no number: say so, send nothing
        setMessage(root, error.message, "error");
        root.classList.add("sb-live-stale");
        finish(move);
        return;
      }
      inFlight = true;
      rt.render(widget, current, move.changed).then(async result => {
        state.timings.answered = performance.now();  // Python's answer is in; now draw it
        await show(result);
        if (!result.error) saveToUrl(key, values(), initial);
        state.last = {values: current, changed: move.changed, result};
        state.redraws.push(performance.now() - move.at);
      }, error => {
        if (!error.cancelled) {
          setMessage(root, "Python failed: " + error.message, "error");
          return;
        }
        if (move.button) setMessage(root, move.button.label + " cancelled: the picture shows " +
          "the settings before it", null);
        else queue.unshift(move);  // another widget's cancel: run it again once restarted
        restart();
      }).finally(() => {
        inFlight = false;
        finish(move);
      });
    }

    function finish(move) {
      state.done++;
      if (move.done) move.done();
      pump();
    }

    // A move of `changed` (null: draw the current values): queued unless the last queued move
    // moved the same control, which then stands for both (its values are read when sent).
    function request(changed, extra) {
      const last = queue[queue.length - 1];
      const same = last && changed !== null && last.changed === changed && !extra && !last.button;
      if (!same) queue.push({changed, at: performance.now(), ...extra});
      state.busy = true;
      pump();
    }

    function start() {
      return loadRuntime().then(loaded => {
        rt = loaded;
        state.state = "live";
        state.timings.ready = state.timings.ready || performance.now();
        root.classList.remove("sb-live-loading");
        pump();
      }, error => {
        state.state = "failed";
        root.classList.remove("sb-live-loading");
        setMessage(root, "could not start Python: " + error.message, "error");
        console.error(error);
      });
    }

    // After a cancel (this widget's or another's) the worker starts again, from its cache.
    function restart() {
      if (rt === null) return;
      rt = null;
      state.state = "loading";
      start();
    }

    function touch() {
      if (state.state !== "static") return;
      state.state = "loading";
      state.timings.touch = performance.now();
      root.classList.add("sb-live-loading");
      setMessage(root, "loading Python…", "loading");
      queue.unshift({changed: null, at: performance.now()});
      state.busy = true;
      start();
    }

    // A button's action (a search) may take a while: the message counts the seconds and
    // offers to cancel it (which restarts Python: a running search cannot be interrupted).
    function press(spec) {
      touch();
      const started = performance.now();
      const box = setMessage(root, spec.label + "…", "loading");
      const cancel = document.createElement("button");
      cancel.type = "button";
      cancel.className = "sb-live-cancel";
      cancel.textContent = "cancel";
      const clock = document.createElement("span");
      box.append(" ", clock, " ", cancel);
      const timer = setInterval(() => {
        clock.textContent = `${((performance.now() - started) / 1e3).toFixed(1)} s`;
      }, 100);
      cancel.addEventListener("click", () => { if (rt) rt.cancel(); });
      request(spec.name, {button: spec, done: () => {
        clearInterval(timer);
        cancel.remove();
        clock.remove();
      }});
    }

    function changed(event) {
      const spec = specs.find(s => s.name === event.target.name);
      if (!spec) return;
      showReadout(form, spec);
      touch();
      request(spec.name);
    }

    function reset() {
      for (const spec of specs) {
        if (spec.kind === "button") continue;
        writeControl(form, spec, spec.value);
        showReadout(form, spec);
      }
      touch();
      request(null);
    }

    // Before the first touch, reserve the live picture's height under the static one (its
    // texts and titles take room the PNG holds inside its own height; on a phone the panels
    // stack), and follow the page's width until the picture is live.
    function reserve() {
      if (chartBox !== null || !frame) return;
      const img = figure.querySelector("img");
      if (!img || !img.naturalWidth) return;
      const width = Math.min(img.naturalWidth, figure.clientWidth);
      const staticHeight = Math.round(width * img.naturalHeight / img.naturalWidth);
      const height = Math.ceil(liveHeight(figure, frame, staticHeight)) + "px";
      if (figure.style.minHeight !== height) figure.style.minHeight = height;
      state.reserved = true;
    }
    const staticImage = figure.querySelector("img");
    if (staticImage) {
      staticImage.decode().catch(() => {}).then(reserve);
      let lastWidth = 0;
      new ResizeObserver(() => {
        if (figure.clientWidth !== lastWidth) {
          lastWidth = figure.clientWidth;
          reserve();
        }
      }).observe(figure);
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
    const resetButton = document.createElement("button");
    resetButton.type = "button";
    resetButton.className = "sb-live-reset";
    resetButton.textContent = "reset";
    resetButton.setAttribute("aria-label", "reset the widget's controls to the book's settings");
    resetButton.addEventListener("click", reset);
    form.appendChild(resetButton);
    form.hidden = false;

    // Settings in the URL (a shared link, a reload, Back): set them, and go live at once so
    // the picture matches them (the static picture shows the book's settings).
    // Otherwise the controls show the book's settings, which the static picture shows (a
    // browser may have restored other inputs on Back).
    for (const spec of specs) {
      if (spec.kind === "button") continue;
      writeControl(form, spec, spec.value);
      showReadout(form, spec);
    }
    const saved = new URL(location.href).searchParams.get(key);
    if (saved) {
      try {
        for (const [name, value] of Object.entries(JSON.parse(saved))) {
          const spec = specs.find(s => s.name === name && s.kind !== "button");
          if (spec) writeControl(form, spec, value);
          if (spec) showReadout(form, spec);
        }
        touch();
      } catch (error) {
        setMessage(root, "the settings in this page's address could not be read", "error");
      }
    }
  }

  function livenAll() { document.querySelectorAll(".sb-live").forEach(liven); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", livenAll);
  else livenAll();
})();
