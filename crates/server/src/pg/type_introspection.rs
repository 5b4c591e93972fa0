//! asyncpg's type introspection. asyncpg decodes a result column or encodes a parameter of a
//! type it has no codec for built in (every array type but `oid[]` and `text[]`) only after
//! it has asked the server what the type is, with one fixed statement
//! (`asyncpg/introspection.py`, `INTRO_LOOKUP_TYPES`): a recursive walk from the types asked
//! for to their element, base, range and attribute types, whose rows hold correlated
//! subqueries with a recursive query and sorted aggregates inside. DataFusion plans none of
//! those, so without an answer `SELECT array_agg(v) …` failed in asyncpg.
//!
//! That statement, recognized by its opening and its list of oids, is run as the equivalent
//! statement over Strata's `pg_type`, which has what the walk can reach here: base types
//! and one-dimensional arrays of them, each array's element a base type; no domains,
//! composites or ranges, so their columns are NULL, as Postgres has them for such types.
//! The rows are those of the types asked for (depth 0) and of their elements (depth 1),
//! deepest first, with the same columns, names and meaning.

/// How asyncpg's introspection statement opens (the versions for Postgres before and from
/// 13 alike).
const OPENING: &str = "WITH RECURSIVE typeinfo_tree(";

/// Where its list of oids is, inside `any(…)`: `$1::oid[]`, or the list once bound.
const OIDS_AT: &str = "ti.oid = any(";

/// The statement to run for `sql` when it is asyncpg's type introspection; `None` for any
/// other statement.
pub(crate) fn equivalent(sql: &str) -> Option<String> {
    if !sql.trim_start().starts_with(OPENING) {
        return None;
    }
    let start = sql.find(OIDS_AT)? + OIDS_AT.len();
    let oids = &sql[start..start + argument_len(&sql[start..])?];
    Some(format!(
        "SELECT t.oid AS oid, ns.nspname AS ns, t.typname AS name, t.typtype AS kind, \
         CAST(NULL AS BIGINT) AS basetype, t.typelem AS elemtype, \
         elem_t.typdelim AS elemdelim, CAST(NULL AS BIGINT) AS range_subtype, \
         CAST(NULL AS TEXT) AS attrtypoids, CAST(NULL AS TEXT) AS attrnames, \
         tree.depth AS depth, CAST(NULL AS TEXT) AS basetype_name, \
         CASE WHEN t.typelem <> 0 THEN format_type(t.typelem, NULL) END AS elemtype_name, \
         CAST(NULL AS TEXT) AS range_subtype_name \
         FROM (SELECT oid, 0 AS depth FROM pg_catalog.pg_type WHERE oid = ANY({oids}) \
               UNION \
               SELECT typelem AS oid, 1 AS depth FROM pg_catalog.pg_type \
               WHERE oid = ANY({oids}) AND typelem <> 0) AS tree \
         JOIN pg_catalog.pg_type AS t ON t.oid = tree.oid \
         JOIN pg_catalog.pg_namespace AS ns ON ns.oid = t.typnamespace \
         LEFT JOIN pg_catalog.pg_type AS elem_t \
           ON t.typlen = -1 AND t.typelem <> 0 AND t.typelem = elem_t.oid \
         ORDER BY depth DESC, oid"
    ))
}

/// The length of the argument at the start of `text`, up to the `)` that closes the call it
/// is in; strings and nested parentheses skipped. `None` when it is never closed.
fn argument_len(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return Some(i),
            },
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_introspection_statement_is_replaced_keeping_its_oids() {
        let asyncpg = "WITH RECURSIVE typeinfo_tree(\n    oid, ns, name, kind, basetype, elemtype, elemdelim,\n\
                       range_subtype, attrtypoids, attrnames, depth)\nAS (\n    SELECT … FROM … AS ti\n    \
                       WHERE\n        ti.oid = any($1::oid[])\n\n    UNION ALL …";
        let replaced = equivalent(asyncpg).unwrap();
        assert_eq!(
            replaced.matches("oid = ANY($1::oid[])").count(),
            2,
            "{replaced}"
        );
        let bound = asyncpg.replace("$1::oid[]", "make_array(1007, (1016))::oid[]");
        let replaced = equivalent(&bound).unwrap();
        assert_eq!(
            replaced
                .matches("oid = ANY(make_array(1007, (1016))::oid[])")
                .count(),
            2,
            "{replaced}"
        );
        assert!(equivalent("SELECT 1 FROM t WHERE ti.oid = any($1)").is_none());
        assert!(equivalent("WITH RECURSIVE typeinfo_tree(x) AS (SELECT 1)").is_none());
        assert!(equivalent("WITH RECURSIVE typeinfo_tree( ti.oid = any($1").is_none());
    }
}
