-- The catalog of extension model_select as sorted text, one fact per line:
-- every member object (pg_depend deptype 'e' on the extension) and what
-- hangs off its tables (columns, defaults, constraints, indexes, triggers),
-- with comments and ACLs.  No OIDs and no data: two databases with the same
-- extension objects give the same text, whatever their history.
-- Used by test/session/upgrade.sh (psql -A -t: one line per row).
WITH ext AS (
    SELECT oid FROM pg_extension WHERE extname = 'model_select'
), member AS (
    SELECT d.classid, d.objid
      FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
), fn AS (
    SELECT p.*, p.oid::regprocedure::text AS sig
      FROM pg_proc p JOIN member m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
), rel AS (
    SELECT c.*, c.oid::regclass::text AS qname
      FROM pg_class c JOIN member m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
), facts(line) AS (
    -- the extension itself
    SELECT format('extension: version = %s, relocatable = %s, schema = %s, comment = %s',
                  e.extversion, e.extrelocatable, e.extnamespace::regnamespace,
                  obj_description(e.oid, 'pg_extension'))
      FROM pg_extension e, ext WHERE e.oid = ext.oid
    UNION ALL
    -- configuration tables for pg_dump (a set: registration order is history)
    SELECT format('extension config: %s %s', c.cfg::regclass, coalesce(quote_literal(c.cond), 'NULL'))
      FROM pg_extension e, ext,
           unnest(e.extconfig, e.extcondition) c(cfg, cond)
     WHERE e.oid = ext.oid
    UNION ALL
    -- every member, by its description
    SELECT 'member: ' || pg_describe_object(m.classid, m.objid, 0) FROM member m
    UNION ALL
    -- functions
    SELECT format('function %s: %s = %s', f.sig, k, v)
      FROM fn f,
           LATERAL (VALUES
               ('arguments', pg_get_function_arguments(f.oid)),
               ('result', pg_get_function_result(f.oid)),
               ('kind', f.prokind::text),
               ('language', (SELECT lanname::text FROM pg_language l WHERE l.oid = f.prolang)),
               ('volatility', f.provolatile::text),
               ('parallel', f.proparallel::text),
               ('strict', f.proisstrict::text),
               ('security definer', f.prosecdef::text),
               ('leakproof', f.proleakproof::text),
               ('returns set', f.proretset::text),
               ('cost', f.procost::text),
               ('rows', f.prorows::text),
               ('config', f.proconfig::text),
               ('source', replace(f.prosrc, E'\n', '\n')),
               ('binary', f.probin),
               ('owner is bootstrap superuser', (f.proowner = 10)::text),
               ('acl', f.proacl::text),
               ('comment', obj_description(f.oid, 'pg_proc'))) a(k, v)
    UNION ALL
    -- tables, views, sequences (and any other member relation)
    SELECT format('relation %s: %s = %s', r.qname, k, v)
      FROM rel r,
           LATERAL (VALUES
               ('kind', r.relkind::text),
               ('persistence', r.relpersistence::text),
               ('options', r.reloptions::text),
               ('row security', r.relrowsecurity::text || '/' || r.relforcerowsecurity::text),
               ('replica identity', r.relreplident::text),
               ('acl', r.relacl::text),
               ('comment', obj_description(r.oid, 'pg_class')),
               ('view', CASE WHEN r.relkind IN ('v', 'm') THEN pg_get_viewdef(r.oid) END)) a(k, v)
    UNION ALL
    -- columns
    SELECT format('column %s.%s: #%s %s%s%s storage %s, compression %s, collation %s, identity %s, generated %s, acl %s, comment %s',
                  r.qname, quote_ident(att.attname), att.attnum, format_type(att.atttypid, att.atttypmod),
                  CASE WHEN att.attnotnull THEN ' NOT NULL' ELSE '' END,
                  coalesce(' DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                  att.attstorage, nullif(att.attcompression, ''), att.attcollation::regcollation, att.attidentity, att.attgenerated,
                  att.attacl, col_description(r.oid, att.attnum))
      FROM rel r
      JOIN pg_attribute att ON att.attrelid = r.oid AND att.attnum > 0 AND NOT att.attisdropped
      LEFT JOIN pg_attrdef ad ON ad.adrelid = r.oid AND ad.adnum = att.attnum
    UNION ALL
    -- constraints
    SELECT format('constraint %s on %s: %s, deferrable %s, comment %s', quote_ident(con.conname), r.qname,
                  pg_get_constraintdef(con.oid), con.condeferrable, obj_description(con.oid, 'pg_constraint'))
      FROM rel r JOIN pg_constraint con ON con.conrelid = r.oid
    UNION ALL
    -- indexes
    SELECT format('index %s: %s, comment %s', i.indexrelid::regclass, pg_get_indexdef(i.indexrelid),
                  obj_description(i.indexrelid, 'pg_class'))
      FROM rel r JOIN pg_index i ON i.indrelid = r.oid
    UNION ALL
    -- triggers
    SELECT format('trigger %s on %s: %s, enabled %s, comment %s', quote_ident(t.tgname), r.qname,
                  pg_get_triggerdef(t.oid), t.tgenabled, obj_description(t.oid, 'pg_trigger'))
      FROM rel r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
    UNION ALL
    -- rules other than views' _RETURN, row security policies
    SELECT format('rule %s on %s: %s', quote_ident(ru.rulename), r.qname, pg_get_ruledef(ru.oid))
      FROM rel r JOIN pg_rewrite ru ON ru.ev_class = r.oid AND ru.rulename <> '_RETURN'
    UNION ALL
    SELECT format('policy %s on %s: %s %s %s', quote_ident(po.polname), r.qname, po.polcmd,
                  pg_get_expr(po.polqual, po.polrelid), pg_get_expr(po.polwithcheck, po.polrelid))
      FROM rel r JOIN pg_policy po ON po.polrelid = r.oid
    UNION ALL
    -- sequences: definition and owning column (not their current value: data)
    SELECT format('sequence %s: type %s, start %s, increment %s, min %s, max %s, cache %s, cycle %s, owned by %s',
                  r.qname, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache,
                  s.seqcycle,
                  (SELECT pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) FROM pg_depend d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = r.oid AND d.deptype = 'a'))
      FROM rel r JOIN pg_sequence s ON s.seqrelid = r.oid
    UNION ALL
    -- initial privileges recorded for extension objects
    SELECT format('init privs %s: %s %s', pg_describe_object(ip.classoid, ip.objoid, ip.objsubid),
                  ip.privtype, ip.initprivs)
      FROM pg_init_privs ip JOIN member m ON m.classid = ip.classoid AND m.objid = ip.objoid
    UNION ALL
    -- the extension's schema and the schemas it created
    SELECT format('schema %s: acl %s, comment %s', n.nspname, n.nspacl, obj_description(n.oid, 'pg_namespace'))
      FROM pg_namespace n
     WHERE n.oid = (SELECT e.extnamespace FROM pg_extension e, ext WHERE e.oid = ext.oid)
        OR EXISTS (SELECT FROM member m WHERE m.classid = 'pg_namespace'::regclass AND m.objid = n.oid)
)
SELECT line FROM facts ORDER BY line COLLATE "C";
