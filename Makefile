# The two commands of README.md, and their helpers.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
# Where links handed out (tracking pages, photos) point: this run's own address by default.
BASE_URL ?= http://$(HOST):$(PORT)

.PHONY: run test bench cluster-test ha-test backup-test lint format setup messages browser-deps test-deps clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

setup: $(STAMP) messages

## The gettext catalogues (locale/<language>/LC_MESSAGES/*.po, in the repository) compiled to
## the .mo files Django reads (not in the repository); msgfmt from Debian's gettext if missing.
messages: $(STAMP)
	@command -v msgfmt >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext)
	@DEBUG=true $(PY) manage.py compilemessages -v0 --ignore=.venv --ignore=staticfiles

## make run: the service on SQLite with demo data, served by gunicorn, with one task worker
## beside it (tasks, webhooks, the periodic jobs); Ctrl-C (or SIGTERM/SIGHUP to make) stops both.
## Quiet, so that the logins stay in sight: only warnings and errors, one readable line each
## (make run LOG_LEVEL=INFO shows every request and task; LOG_FORMAT=json, production's lines).
run: export LOG_LEVEL ?= WARNING
run: export LOG_FORMAT ?= text
run: $(STAMP) messages
	@test -f .env || { echo "DEBUG=true" > .env; echo "SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" >> .env; }
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py collectstatic --noinput -v0
	@$(PY) manage.py seed_demo --key-file .demo-key | tee .demo.txt
	@echo "Dashboard:   http://$(HOST):$(PORT)/  (sign in with the dashboard login above)"
	@echo "Console:     http://$(HOST):$(PORT)/admin/  (operators: the admin login above)"
	@echo "API:         http://$(HOST):$(PORT)/api/v1/  (docs at /api/v1/docs/; PORT=$(PORT), change with make run PORT=...)"
	@echo "MCP:         http://$(HOST):$(PORT)/mcp  (for AI assistants, the sandbox key above as Bearer: docs/agents.md)"
	@# bin/serve.py starts gunicorn and the task worker and stops both, whatever stops make run:
	@# Ctrl-C, SIGTERM or SIGHUP to make (it notices make's death), or either of them exiting.
	@BASE_URL=$(BASE_URL) exec $(PY) bin/serve.py --bind $(HOST):$(PORT) --workers 2

## make test: the whole suite on a throwaway PostgreSQL and Redis (started and removed by the suite),
## in two processes (one per core; each has its own PostgreSQL, Redis and browser), a file each,
## handed out in the suite's order: its longest files first (tests/conftest.py).
## Then the main paths again on the embedded default, SQLite, as make run serves them
## (the files tests/conftest.py lists in EMBEDDED): what works on PostgreSQL only fails there.
test: $(STAMP) messages test-deps
	$(VENV)/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder
	TEST_DATABASE=sqlite $(VENV)/bin/pytest -m embedded -n 2 --dist loadfile

## make bench: figures on PostgreSQL + gunicorn; never run as tests.
bench: $(STAMP)
	$(PY) bench/geo.py
	$(PY) bench/bulk.py
	$(PY) bench/webhooks.py
	$(PY) bench/couriers.py
	$(PY) bench/routes.py
	$(PY) bench/solomon.py
	$(PY) bench/dispatch.py
	$(PY) bench/day.py
	$(PY) bench/small_calls.py

## make cluster-test: two app instances behind HAProxy, PgBouncer, Redis, two workers, under
## locust load for 90 s while parts are killed and restarted; prints figures and invariants.
cluster-test: $(STAMP)
	$(PY) bench/cluster.py

## make ha-test: a pg_auto_failover formation (monitor, primary, synchronous standby, async
## replica; installed from Debian if missing), the apps and workers on a multi-host URL,
## 60 s of the cluster load while the primary is killed -9 twice; figures and invariants.
ha-test: $(STAMP)
	$(PY) bench/ha.py

## make backup-test: PostgreSQL archiving into a pgBackRest repository (pgBackRest installed from
## Debian if missing) under the cluster load; a full and a differential backup during it, the
## moment T, a destructive mistake, a restore to T into a new cluster; invariants and figures.
backup-test: $(STAMP)
	$(PY) bench/backup.py

browser-deps:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# What the suite runs besides PostgreSQL: chromium for the browser tests, redis-server for the
# counters' Redis store (CACHE_URL=redis://), pgbackrest for the backup check, axe-core for the
# accessibility checks; each fetched only if missing.
test-deps: $(STAMP) browser-deps
	@test -x /usr/bin/redis-server || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server)
	@test -x /usr/bin/pgbackrest || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbackrest)
	@# axe-core (accessibility checks in the browser tests), pinned and checked, from npm.
	@$(PY) tests/browser/axe.py >/dev/null

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles .demo.txt .demo-key media locale/*/LC_MESSAGES/*.mo
