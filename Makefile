# model_select -- PostgreSQL 15 extension, built with PGXS.
#
#   make / make install / make installcheck / make clean   (plain PGXS)
#   make test   install missing Debian packages, build, install, then run
#               pg_regress (sql/, expected/) + pgTAP (test/tap/) + session
#               tests (test/session/*.sh) against a throwaway cluster
#   make demo   same set-up, then run demo/demo.sql in a throwaway cluster
#
# The Makefile must also parse on a machine where PostgreSQL is not installed
# yet (so that `make test` can install it): PGXS is only included when it
# exists.  pg_config itself ships in postgresql-client-15, pgxs.mk in
# postgresql-server-dev-15, so test for the latter.

.DEFAULT_GOAL := all

PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config

MODULE_big = model_select
# C sources: src/model_select.c plus one folder per subsystem (src/*/).
SOURCES := $(wildcard src/*.c src/*/*.c)
HEADERS := $(wildcard src/*/*.h)
OBJS := $(patsubst %.c,%.o,$(SOURCES))
EXTENSION = model_select
DATA := $(wildcard sql/model_select--*.sql)

# pg_regress: sql/<name>.sql is compared with expected/<name>.out.  The
# extension install script(s) in sql/ are not tests.  (`:=` so that an empty
# list leaves REGRESS undefined for PGXS' `ifdef REGRESS`.)
REGRESS := $(patsubst sql/%.sql,%,$(filter-out sql/model_select--%,$(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=.

# -Wextra with PG 15 headers (checked with gcc 12 on Debian 12):
# -Wno-unused-parameter: static inline functions in storage/bufpage.h and
#   lib/ilist.h have unused parameters (and so do fmgr/trigger callbacks).
# -Wno-sign-compare: the ubiquitous ARR_DATA_PTR() macro (via ARR_DATA_OFFSET
#   in utils/array.h) mixes int32 and size_t in a ?: expression.
# -Wno-missing-field-initializers: allow partial struct initialisers.
PG_CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers
BLAS_CFLAGS := $(shell pkg-config --cflags openblas lapacke 2>/dev/null)
BLAS_LIBS := $(shell pkg-config --libs openblas lapacke 2>/dev/null)
# Headers are included by their path below src/ ("core/state.h").
PG_CPPFLAGS += -Isrc $(BLAS_CFLAGS)
SHLIB_LINK += $(BLAS_LIBS) -lm

# PGXS does not track header dependencies: rebuild every object when any
# header changes (struct layouts are shared between files).
$(OBJS): $(HEADERS)

EXTRA_CLEAN = results/ regression.diffs regression.out log/ tmp_check/

ifneq ($(wildcard $(PG_CONFIG)),)
PGXS := $(shell $(PG_CONFIG) --pgxs)
endif

ifneq ($(and $(PGXS),$(wildcard $(PGXS))),)
include $(PGXS)
else
# PostgreSQL development files are not installed (yet).
.PHONY: all install uninstall installcheck check clean
all install uninstall installcheck check:
	@echo "PGXS not found (PG_CONFIG=$(PG_CONFIG))." >&2
	@echo "Install the dependencies first: scripts/ensure-deps.sh (as root), or run 'make test'." >&2
	@exit 1
clean:
	rm -f $(OBJS) $(OBJS:.o=.bc) $(MODULE_big).so $(MODULE_big).bc
	rm -rf $(EXTRA_CLEAN)
endif

# The recursive $(MAKE) calls re-read this Makefile, so PGXS is included there
# even when ensure-deps.sh has only just installed PostgreSQL.
# (MS_MAKE: passing $(MAKE) without naming it in the recipe line keeps
# `make -n test` from actually running the test suite.)
MS_MAKE = $(MAKE)

.PHONY: test demo ms-setup bench-perf bench-scale bench-forgetting bench-quality bench-confidence
ms-setup:
	scripts/ensure-deps.sh
	$(MAKE) PG_CONFIG=$(PG_CONFIG)
	$(MAKE) PG_CONFIG=$(PG_CONFIG) install

test: ms-setup
	MAKE='$(MS_MAKE)' PG_CONFIG='$(PG_CONFIG)' scripts/with-cluster.sh scripts/run-tests.sh

demo:
	@test -f demo/demo.sql || { echo "make demo: demo/demo.sql does not exist" >&2; exit 1; }
	$(MAKE) ms-setup
	scripts/with-cluster.sh sh -c 'psql -X -v ON_ERROR_STOP=1 -c "CREATE EXTENSION model_select" && psql -X -v ON_ERROR_STOP=1 -f demo/demo.sql'

# Benchmarks are separate from `make test`: each prints ratios against a
# baseline measured in the same session (see bench/README.md).
bench-perf: ms-setup
	bench/perf.sh

bench-scale: ms-setup
	bench/scale.sh

bench-quality: ms-setup
	bench/quality.sh

bench-forgetting: ms-setup
	bench/forgetting.sh

bench-confidence: ms-setup
	bench/confidence.sh
