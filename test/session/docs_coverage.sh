#!/usr/bin/env bash
# Docs coverage: the manual names everything the extension offers.
#
# Fails (exit 1, naming what is missing) unless every one of these appears
# as a word in some docs/*.md file:
#   - every function, table and view of schema model_select (from pg_proc and
#     pg_class; internal objects, whose names start with "_", excepted);
#   - every policy and kernel, read from the extension's registry (policies()
#     and kernels()), and every confidence bound and setting key, read from
#     the extension too (the message and DETAIL of resolve_settings()'s
#     errors, for every policy with each of its kernels): no list kept here;
# and unless README.md is at most 25,600 bytes.
#
# Needs PGHOST/PGPORT/PGUSER (see scripts/with-cluster.sh) and model_select
# installed in the server; creates a scratch database of its own and drops it
# at the end.  Run from anywhere: bash test/session/docs_coverage.sh
# (MS_DOCS_DIR=<dir> checks another folder instead of docs/.)
set -euo pipefail

cd "$(dirname "$0")/../.."
DOCS=${MS_DOCS_DIR:-docs}
README_MAX=25600
DB=model_select_docs_coverage_$$
cleanup() { dropdb --if-exists "$DB" >/dev/null 2>&1 || true; }
trap cleanup EXIT

q() { psql -X -q -A -t -F '|' -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

createdb "$DB"
q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION model_select;

-- The message, hint and detail of the error that statement q raises.
CREATE FUNCTION docs_err(q text, OUT msg text, OUT hint text, OUT detail text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    msg := 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT,
                            detail = PG_EXCEPTION_DETAIL;
END $$;

-- The names of a sentence such as "expected one of a, b and c" or
-- "Valid keys for policy p are: k1, k2, k3.": what follows "are" / "one of".
CREATE FUNCTION docs_list(s text) RETURNS SETOF text LANGUAGE sql AS $$
    SELECT btrim(x)
      FROM regexp_split_to_table(
               regexp_replace(regexp_replace(coalesce(s, ''), '^.*\m(are:?|one of)\s+', ''),
                              '\.\s*$', ''),
               ',\s*|\s+and\s+') x
     WHERE s ~ '\m(are:?|one of)\s' AND btrim(x) <> ''
$$;

-- (kind, name) of every policy, kernel, confidence bound and setting key.
CREATE FUNCTION docs_vocab() RETURNS TABLE (kind text, name text)
LANGUAGE plpgsql AS $$
DECLARE
    e record;
    p text;
    k text;
    c text;
    kernels text[];
    bounds text[];
    policies text[];
BEGIN
    policies := ARRAY(SELECT x.name FROM model_select.policies() x);
    IF cardinality(policies) = 0 THEN
        RAISE EXCEPTION 'policies() lists no policy';
    END IF;
    RETURN QUERY SELECT 'kernel'::text, x.name FROM model_select.kernels() x;
    -- confidence bounds: the message of a bad "confidence" value
    e := docs_err($q$SELECT model_select.resolve_settings('pak_ucb', NULL, '{"confidence": "?"}')$q$);
    bounds := ARRAY(SELECT docs_list(e.msg));
    IF cardinality(bounds) = 0 THEN
        RAISE EXCEPTION 'no list of confidence bounds in: %', e.msg;
    END IF;
    RETURN QUERY SELECT 'confidence bound'::text, b FROM unnest(bounds) b;

    FOREACH p IN ARRAY policies LOOP
        RETURN QUERY SELECT 'policy'::text, p;
        -- each kernel it takes, or NULL for none
        kernels := ARRAY(SELECT kn.kernel FROM model_select.policies() x
                           LEFT JOIN LATERAL unnest(x.kernels) kn(kernel) ON true WHERE x.name = p);
        FOREACH k IN ARRAY kernels LOOP
            -- settings that are not an object: DETAIL lists the valid keys
            e := docs_err(format('SELECT model_select.resolve_settings(%L, %L, %L)', p, k, '[]'));
            IF NOT EXISTS (SELECT FROM docs_list(e.detail)) THEN
                RAISE EXCEPTION 'no key list in the DETAIL for policy %, kernel %: %, %',
                    p, k, e.msg, e.detail;
            END IF;
            RETURN QUERY SELECT 'setting'::text, x FROM docs_list(e.detail) x;
            -- keys that apply only under some confidence bound (grid, horizon,
            -- noise...): an unknown key after "confidence" (jsonb orders keys
            -- by length, so the longer unknown key is read after it)
            FOREACH c IN ARRAY bounds LOOP
                e := docs_err(format('SELECT model_select.resolve_settings(%L, %L, %L)', p, k,
                                     jsonb_build_object('confidence', c, 'zz_not_a_setting_key', 1)));
                RETURN QUERY SELECT 'setting'::text, x FROM docs_list(e.detail) x;
            END LOOP;
        END LOOP;
    END LOOP;
END $$;
SQL

vocab=$(q <<'SQL'
SELECT DISTINCT kind, name FROM (
    SELECT 'function' AS kind, proname::text AS name FROM pg_proc
     WHERE pronamespace = 'model_select'::regnamespace AND proname !~ '^_'
    UNION ALL
    SELECT CASE relkind WHEN 'v' THEN 'view' ELSE 'table' END, relname::text FROM pg_class
     WHERE relnamespace = 'model_select'::regnamespace AND relkind IN ('r', 'p', 'v', 'm')
       AND relname !~ '^_'
    UNION ALL
    SELECT kind, name FROM docs_vocab()) v
ORDER BY 1, 2;
SQL
)

shopt -s nullglob
docs=("$DOCS"/*.md)
shopt -u nullglob
missing=()
count=0
while IFS='|' read -r kind name; do
    [ -n "$name" ] || continue
    count=$((count + 1))
    if [ ${#docs[@]} -eq 0 ] || ! grep -q -w -F -- "$name" "${docs[@]}"; then
        missing+=("$kind $name")
    fi
done <<< "$vocab"
for kind in function table view policy kernel 'confidence bound' setting; do
    if ! grep -q "^$kind|" <<< "$vocab"; then
        missing+=("(could not read any $kind from the extension)")
    fi
done

status=0
echo "checked $count names against ${#docs[@]} files in $DOCS/"
if [ ${#missing[@]} -gt 0 ]; then
    echo "not documented in $DOCS/*.md:"
    printf '  %s\n' "${missing[@]}"
    status=1
fi
size=$(wc -c < README.md)
if [ "$size" -gt "$README_MAX" ]; then
    echo "README.md is $size bytes, more than $README_MAX"
    status=1
else
    echo "README.md is $size bytes (at most $README_MAX)"
fi
[ $status -eq 0 ] && echo "docs coverage: PASS" || echo "docs coverage: FAIL"
exit $status
