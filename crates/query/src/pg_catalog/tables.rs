//! The `pg_catalog` tables, built from the engine's catalog when a statement reads them.
//!
//! Strata's terms in Postgres's: the connection's database is one Postgres database whose
//! one user schema (namespace oid 2200) is named after it and holds its tables (relkind
//! `r`, heap); a table's columns are its time, tags and fields in `DESCRIBE`'s order. Oids
//! of tables and databases are hashes of their names, so they stay the same between the
//! statements of a client's `\d`. Tables Strata has nothing for (indexes, constraints,
//! triggers, policies, publications, …) are there, empty, so clients' joins find them.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Int16Builder, Int32Builder, Int64Builder,
    RecordBatch, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;
use strata_storage::Engine;

use super::types::{PG_TYPES, PgType, pg_type_of};

/// `pg_namespace.oid` of `pg_catalog`.
pub(crate) const PG_CATALOG_NAMESPACE: i64 = 11;
/// `pg_namespace.oid` of the database's own schema (Postgres's `public`).
pub(crate) const DATABASE_NAMESPACE: i64 = 2200;
/// `pg_namespace.oid` of `information_schema`.
const INFORMATION_SCHEMA_NAMESPACE: i64 = 13_000;
/// The catalog's array columns (access lists, options, settings), stored as text: NULL in
/// every row, since Strata has none of these. A statement that builds an array from one
/// (`ARRAY(SELECT … FROM unnest(c.reloptions))`) can be answered with an empty one.
pub const NULL_ARRAY_COLUMNS: &[&str] = &[
    "nspacl",
    "relacl",
    "reloptions",
    "attacl",
    "attoptions",
    "attfdwoptions",
    "datacl",
    "rolconfig",
    "spcacl",
    "spcoptions",
    "proacl",
    "polroles",
];

/// `pg_tablespace.oid` of `pg_default`, where every database is.
const DEFAULT_TABLESPACE: i64 = 1663;
/// The one role: oid 10, as a Postgres bootstrap superuser.
pub(crate) const OWNER: i64 = 10;
/// The role's name.
pub const OWNER_NAME: &str = "strata";

/// One cell of a catalog row.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    Int(i64),
    Float(f32),
    Text(String),
    Bool(bool),
    Null,
}

use Cell::{Bool, Int, Null, Text};

fn text(s: &str) -> Cell {
    Text(s.to_owned())
}

/// A catalog table: its name, columns and how to build its rows for a database.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CatalogTable {
    pub name: &'static str,
    columns: &'static [(&'static str, Kind)],
    rows: fn(&Engine, &str) -> Vec<Vec<Cell>>,
}

/// Column types, as Postgres declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `oid`, `regproc`, `int8`: Int64.
    Oid,
    /// `int2`.
    I16,
    /// `int4`.
    I32,
    /// `float4`.
    F32,
    /// `name`, `text`, `"char"`, and arrays (shown as text).
    Text,
    /// `bool`.
    Bool,
}

impl Kind {
    fn data_type(self) -> DataType {
        match self {
            Kind::Oid => DataType::Int64,
            Kind::I16 => DataType::Int16,
            Kind::I32 => DataType::Int32,
            Kind::F32 => DataType::Float32,
            Kind::Text => DataType::Utf8,
            Kind::Bool => DataType::Boolean,
        }
    }
}

impl CatalogTable {
    pub(crate) fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(name, kind)| Field::new(*name, kind.data_type(), true))
                .collect::<Vec<_>>(),
        ))
    }

    /// The table's rows for `database`, as one batch.
    pub(crate) fn batch(&self, engine: &Engine, database: &str) -> Result<RecordBatch> {
        let rows = (self.rows)(engine, database);
        let columns: Vec<ArrayRef> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| column(*kind, rows.iter().map(|row| &row[i])))
            .collect();
        Ok(RecordBatch::try_new(self.schema(), columns)?)
    }
}

fn column<'a>(kind: Kind, cells: impl Iterator<Item = &'a Cell>) -> ArrayRef {
    macro_rules! build {
        ($builder:ty, $variant:ident, $convert:expr) => {{
            let mut b = <$builder>::new();
            for cell in cells {
                match cell {
                    Cell::$variant(v) => b.append_value($convert(v)),
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    match kind {
        Kind::Oid => build!(Int64Builder, Int, |v: &i64| *v),
        Kind::I16 => build!(Int16Builder, Int, |v: &i64| *v as i16),
        Kind::I32 => build!(Int32Builder, Int, |v: &i64| *v as i32),
        Kind::F32 => build!(Float32Builder, Float, |v: &f32| *v),
        Kind::Text => build!(StringBuilder, Text, |v: &String| v.clone()),
        Kind::Bool => build!(BooleanBuilder, Bool, |v: &bool| *v),
    }
}

/// A catalog table's oid: Postgres's own for the tables clients name by oid
/// (`classoid = 'pg_class'::regclass`), a hash for the rest.
pub(crate) fn catalog_oid(name: &str) -> i64 {
    match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_class" => 1259,
        "pg_database" => 1262,
        "pg_namespace" => 2615,
        "pg_constraint" => 2606,
        "pg_description" => 2609,
        "pg_index" => 2610,
        "pg_trigger" => 2620,
        _ => oid_of(&format!("pg_catalog.{name}")),
    }
}

/// An oid for a user object from its name: FNV-1a folded above Postgres's first user oid.
pub(crate) fn oid_of(name: &str) -> i64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    16_384 + (hash % (i32::MAX as u64 - 16_384)) as i64
}

const NO_ROWS: fn(&Engine, &str) -> Vec<Vec<Cell>> = |_, _| Vec::new();

/// Every `pg_catalog` table.
pub(crate) const TABLES: &[CatalogTable] = &[
    CatalogTable {
        name: "pg_namespace",
        columns: &[
            ("oid", Kind::Oid),
            ("nspname", Kind::Text),
            ("nspowner", Kind::Oid),
            ("nspacl", Kind::Text),
        ],
        rows: |_, database| {
            vec![
                vec![
                    Int(PG_CATALOG_NAMESPACE),
                    text("pg_catalog"),
                    Int(OWNER),
                    Null,
                ],
                vec![Int(DATABASE_NAMESPACE), text(database), Int(OWNER), Null],
                vec![
                    Int(INFORMATION_SCHEMA_NAMESPACE),
                    text("information_schema"),
                    Int(OWNER),
                    Null,
                ],
            ]
        },
    },
    CatalogTable {
        name: "pg_class",
        columns: &[
            ("oid", Kind::Oid),
            ("relname", Kind::Text),
            ("relnamespace", Kind::Oid),
            ("reltype", Kind::Oid),
            ("reloftype", Kind::Oid),
            ("relowner", Kind::Oid),
            ("relam", Kind::Oid),
            ("relfilenode", Kind::Oid),
            ("reltablespace", Kind::Oid),
            ("relpages", Kind::I32),
            ("reltuples", Kind::F32),
            ("reltoastrelid", Kind::Oid),
            ("relhasindex", Kind::Bool),
            ("relisshared", Kind::Bool),
            ("relpersistence", Kind::Text),
            ("relkind", Kind::Text),
            ("relnatts", Kind::I16),
            ("relchecks", Kind::I16),
            ("relhasrules", Kind::Bool),
            ("relhastriggers", Kind::Bool),
            ("relhassubclass", Kind::Bool),
            ("relrowsecurity", Kind::Bool),
            ("relforcerowsecurity", Kind::Bool),
            ("relispopulated", Kind::Bool),
            ("relreplident", Kind::Text),
            ("relispartition", Kind::Bool),
            ("relacl", Kind::Text),
            ("reloptions", Kind::Text),
            ("relpartbound", Kind::Text),
        ],
        rows: |engine, database| {
            let user = engine.catalog().tables(database).into_iter().map(|table| {
                let columns = 1 + table.tags.len() + table.fields.len();
                let oid = oid_of(&format!("{database}.{}", table.name));
                (oid, table.name.clone(), DATABASE_NAMESPACE, columns)
            });
            // The catalog's own tables are relations too (`'pg_class'::regclass`).
            let catalog = TABLES.iter().map(|t| {
                (
                    catalog_oid(t.name),
                    t.name.to_owned(),
                    PG_CATALOG_NAMESPACE,
                    t.columns.len(),
                )
            });
            user.chain(catalog)
                .map(|(oid, name, namespace, columns)| {
                    vec![
                        Int(oid),
                        text(&name),
                        Int(namespace),
                        Int(0),
                        Int(0),
                        Int(OWNER),
                        Int(2),
                        Int(oid),
                        Int(0),
                        Int(0),
                        Cell::Float(-1.0),
                        Int(0),
                        Bool(false),
                        Bool(false),
                        text("p"),
                        text("r"),
                        Int(columns as i64),
                        Int(0),
                        Bool(false),
                        Bool(false),
                        Bool(false),
                        Bool(false),
                        Bool(false),
                        Bool(true),
                        text("d"),
                        Bool(false),
                        Null,
                        Null,
                        Null,
                    ]
                })
                .collect()
        },
    },
    CatalogTable {
        name: "pg_attribute",
        columns: &[
            ("attrelid", Kind::Oid),
            ("attname", Kind::Text),
            ("atttypid", Kind::Oid),
            ("attlen", Kind::I16),
            ("attnum", Kind::I16),
            ("atttypmod", Kind::I32),
            ("attndims", Kind::I16),
            ("attnotnull", Kind::Bool),
            ("atthasdef", Kind::Bool),
            ("atthasmissing", Kind::Bool),
            ("attidentity", Kind::Text),
            ("attgenerated", Kind::Text),
            ("attisdropped", Kind::Bool),
            ("attislocal", Kind::Bool),
            ("attinhcount", Kind::I16),
            ("attstattarget", Kind::I16),
            ("attstorage", Kind::Text),
            ("attcompression", Kind::Text),
            ("attcollation", Kind::Oid),
            ("attacl", Kind::Text),
            ("attoptions", Kind::Text),
            ("attfdwoptions", Kind::Text),
        ],
        rows: |engine, database| {
            let user = engine.catalog().tables(database).into_iter().map(|table| {
                let oid = oid_of(&format!("{database}.{}", table.name));
                (oid, strata_storage::arrow::table_schema(&table, None))
            });
            let catalog = TABLES.iter().map(|t| (catalog_oid(t.name), t.schema()));
            let mut rows = Vec::new();
            for (oid, schema) in user.chain(catalog) {
                for (i, field) in schema.fields().iter().enumerate() {
                    let ty = pg_type_of(field.data_type());
                    let collation = if ty.oid == 25 { 100 } else { 0 };
                    rows.push(vec![
                        Int(oid),
                        text(field.name()),
                        Int(i64::from(ty.oid)),
                        Int(i64::from(ty.len)),
                        Int(i as i64 + 1),
                        Int(-1),
                        Int(0),
                        Bool(!field.is_nullable()),
                        Bool(false),
                        Bool(false),
                        text(""),
                        text(""),
                        Bool(false),
                        Bool(true),
                        Int(0),
                        Int(-1),
                        text(if ty.len < 0 { "x" } else { "p" }),
                        text(""),
                        Int(collation),
                        Null,
                        Null,
                        Null,
                    ]);
                }
            }
            rows
        },
    },
    CatalogTable {
        name: "pg_type",
        columns: &[
            ("oid", Kind::Oid),
            ("typname", Kind::Text),
            ("typnamespace", Kind::Oid),
            ("typowner", Kind::Oid),
            ("typlen", Kind::I16),
            ("typbyval", Kind::Bool),
            ("typtype", Kind::Text),
            ("typcategory", Kind::Text),
            ("typisdefined", Kind::Bool),
            ("typdelim", Kind::Text),
            ("typrelid", Kind::Oid),
            ("typelem", Kind::Oid),
            ("typarray", Kind::Oid),
            ("typbasetype", Kind::Oid),
            ("typnotnull", Kind::Bool),
            ("typtypmod", Kind::I32),
            ("typcollation", Kind::Oid),
            ("typdefault", Kind::Text),
            ("typinput", Kind::Text),
            ("typoutput", Kind::Text),
            ("typreceive", Kind::Text),
            ("typsend", Kind::Text),
        ],
        rows: |_, _| {
            PG_TYPES
                .iter()
                .map(|t| {
                    let category = match t.oid {
                        _ if t.element != 0 => "A",
                        16 => "B",
                        19 | 25 => "S",
                        1082 | 1114 | 1184 => "D",
                        1186 => "T",
                        17 => "U",
                        _ => "N",
                    };
                    vec![
                        Int(i64::from(t.oid)),
                        text(t.name),
                        Int(PG_CATALOG_NAMESPACE),
                        Int(OWNER),
                        Int(i64::from(t.len)),
                        Bool((1..=8).contains(&t.len)),
                        text("b"),
                        text(category),
                        Bool(true),
                        // Every type here separates array elements with a comma.
                        text(","),
                        Int(0),
                        Int(i64::from(t.element)),
                        Int(i64::from(t.array)),
                        Int(0),
                        Bool(false),
                        Int(-1),
                        Int(if t.oid == 25 || t.oid == 1009 { 100 } else { 0 }),
                        Null,
                    ]
                    .into_iter()
                    .chain(io_functions(t).map(Text))
                    .collect()
                })
                .collect()
        },
    },
    CatalogTable {
        name: "pg_database",
        columns: &[
            ("oid", Kind::Oid),
            ("datname", Kind::Text),
            ("datdba", Kind::Oid),
            ("encoding", Kind::I32),
            ("datlocprovider", Kind::Text),
            ("datistemplate", Kind::Bool),
            ("datallowconn", Kind::Bool),
            ("datconnlimit", Kind::I32),
            ("datcollate", Kind::Text),
            ("datctype", Kind::Text),
            ("daticulocale", Kind::Text),
            ("dattablespace", Kind::Oid),
            ("datacl", Kind::Text),
        ],
        rows: |engine, current| {
            let mut names = engine.catalog().databases();
            if !names.iter().any(|n| n == current) {
                names.push(current.to_owned());
            }
            names.sort();
            names
                .iter()
                .map(|name| {
                    vec![
                        Int(oid_of(name)),
                        text(name),
                        Int(OWNER),
                        Int(6),
                        text("c"),
                        Bool(false),
                        Bool(true),
                        Int(-1),
                        text("C"),
                        text("C"),
                        Null,
                        Int(DEFAULT_TABLESPACE),
                        Null,
                    ]
                })
                .collect()
        },
    },
    CatalogTable {
        name: "pg_am",
        columns: &[
            ("oid", Kind::Oid),
            ("amname", Kind::Text),
            ("amtype", Kind::Text),
        ],
        rows: |_, _| vec![vec![Int(2), text("heap"), text("t")]],
    },
    CatalogTable {
        name: "pg_roles",
        columns: &[
            ("oid", Kind::Oid),
            ("rolname", Kind::Text),
            ("rolsuper", Kind::Bool),
            ("rolinherit", Kind::Bool),
            ("rolcreaterole", Kind::Bool),
            ("rolcreatedb", Kind::Bool),
            ("rolcanlogin", Kind::Bool),
            ("rolreplication", Kind::Bool),
            ("rolconnlimit", Kind::I32),
            ("rolpassword", Kind::Text),
            ("rolvaliduntil", Kind::Text),
            ("rolbypassrls", Kind::Bool),
            ("rolconfig", Kind::Text),
        ],
        rows: |_, _| {
            vec![vec![
                Int(OWNER),
                text(OWNER_NAME),
                Bool(true),
                Bool(true),
                Bool(true),
                Bool(true),
                Bool(true),
                Bool(false),
                Int(-1),
                text("********"),
                Null,
                Bool(true),
                Null,
            ]]
        },
    },
    CatalogTable {
        name: "pg_auth_members",
        columns: &[
            ("roleid", Kind::Oid),
            ("member", Kind::Oid),
            ("grantor", Kind::Oid),
            ("admin_option", Kind::Bool),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_tablespace",
        columns: &[
            ("oid", Kind::Oid),
            ("spcname", Kind::Text),
            ("spcowner", Kind::Oid),
            ("spcacl", Kind::Text),
            ("spcoptions", Kind::Text),
        ],
        rows: |_, _| {
            vec![
                vec![
                    Int(DEFAULT_TABLESPACE),
                    text("pg_default"),
                    Int(OWNER),
                    Null,
                    Null,
                ],
                vec![Int(1664), text("pg_global"), Int(OWNER), Null, Null],
            ]
        },
    },
    CatalogTable {
        name: "pg_proc",
        columns: &[
            ("oid", Kind::Oid),
            ("proname", Kind::Text),
            ("pronamespace", Kind::Oid),
            ("proowner", Kind::Oid),
            ("prolang", Kind::Oid),
            ("prokind", Kind::Text),
            ("proretset", Kind::Bool),
            ("provolatile", Kind::Text),
            ("pronargs", Kind::I16),
            ("prorettype", Kind::Oid),
            ("proargtypes", Kind::Text),
            ("proacl", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_language",
        columns: &[
            ("oid", Kind::Oid),
            ("lanname", Kind::Text),
            ("lanowner", Kind::Oid),
            ("lanispl", Kind::Bool),
            ("lanpltrusted", Kind::Bool),
            ("lanplcallfoid", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_operator",
        columns: &[
            ("oid", Kind::Oid),
            ("oprname", Kind::Text),
            ("oprnamespace", Kind::Oid),
            ("oprowner", Kind::Oid),
            ("oprkind", Kind::Text),
            ("oprleft", Kind::Oid),
            ("oprright", Kind::Oid),
            ("oprresult", Kind::Oid),
            ("oprcode", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_conversion",
        columns: &[
            ("oid", Kind::Oid),
            ("conname", Kind::Text),
            ("connamespace", Kind::Oid),
            ("conowner", Kind::Oid),
            ("conforencoding", Kind::I32),
            ("contoencoding", Kind::I32),
            ("condefault", Kind::Bool),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_event_trigger",
        columns: &[
            ("oid", Kind::Oid),
            ("evtname", Kind::Text),
            ("evtevent", Kind::Text),
            ("evtowner", Kind::Oid),
            ("evtfoid", Kind::Oid),
            ("evtenabled", Kind::Text),
            ("evttags", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_foreign_data_wrapper",
        columns: &[
            ("oid", Kind::Oid),
            ("fdwname", Kind::Text),
            ("fdwowner", Kind::Oid),
            ("fdwhandler", Kind::Oid),
            ("fdwvalidator", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_foreign_server",
        columns: &[
            ("oid", Kind::Oid),
            ("srvname", Kind::Text),
            ("srvowner", Kind::Oid),
            ("srvfdw", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_extension",
        columns: &[
            ("oid", Kind::Oid),
            ("extname", Kind::Text),
            ("extowner", Kind::Oid),
            ("extnamespace", Kind::Oid),
            ("extrelocatable", Kind::Bool),
            ("extversion", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_attrdef",
        columns: &[
            ("oid", Kind::Oid),
            ("adrelid", Kind::Oid),
            ("adnum", Kind::I16),
            ("adbin", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_enum",
        columns: &[
            ("oid", Kind::Oid),
            ("enumtypid", Kind::Oid),
            ("enumsortorder", Kind::F32),
            ("enumlabel", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_sequence",
        columns: &[
            ("seqrelid", Kind::Oid),
            ("seqtypid", Kind::Oid),
            ("seqstart", Kind::Oid),
            ("seqincrement", Kind::Oid),
            ("seqmax", Kind::Oid),
            ("seqmin", Kind::Oid),
            ("seqcache", Kind::Oid),
            ("seqcycle", Kind::Bool),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_collation",
        columns: &[
            ("oid", Kind::Oid),
            ("collname", Kind::Text),
            ("collnamespace", Kind::Oid),
        ],
        rows: |_, _| {
            vec![
                vec![Int(100), text("default"), Int(PG_CATALOG_NAMESPACE)],
                vec![Int(950), text("C"), Int(PG_CATALOG_NAMESPACE)],
            ]
        },
    },
    CatalogTable {
        name: "pg_index",
        columns: &[
            ("indexrelid", Kind::Oid),
            ("indrelid", Kind::Oid),
            ("indnatts", Kind::I16),
            ("indisunique", Kind::Bool),
            ("indisprimary", Kind::Bool),
            ("indisclustered", Kind::Bool),
            ("indisvalid", Kind::Bool),
            ("indisreplident", Kind::Bool),
            ("indkey", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_constraint",
        columns: &[
            ("oid", Kind::Oid),
            ("conname", Kind::Text),
            ("connamespace", Kind::Oid),
            ("contype", Kind::Text),
            ("conrelid", Kind::Oid),
            ("contypid", Kind::Oid),
            ("confrelid", Kind::Oid),
            ("conindid", Kind::Oid),
            ("conparentid", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_inherits",
        columns: &[
            ("inhrelid", Kind::Oid),
            ("inhparent", Kind::Oid),
            ("inhseqno", Kind::I32),
            ("inhdetachpending", Kind::Bool),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_trigger",
        columns: &[
            ("oid", Kind::Oid),
            ("tgrelid", Kind::Oid),
            ("tgname", Kind::Text),
            ("tgenabled", Kind::Text),
            ("tgisinternal", Kind::Bool),
            ("tgparentid", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_policy",
        columns: &[
            ("oid", Kind::Oid),
            ("polname", Kind::Text),
            ("polrelid", Kind::Oid),
            ("polcmd", Kind::Text),
            ("polpermissive", Kind::Bool),
            ("polroles", Kind::Text),
            ("polqual", Kind::Text),
            ("polwithcheck", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_statistic_ext",
        columns: &[
            ("oid", Kind::Oid),
            ("stxrelid", Kind::Oid),
            ("stxname", Kind::Text),
            ("stxnamespace", Kind::Oid),
            ("stxkind", Kind::Text),
            ("stxstattarget", Kind::I32),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_publication",
        columns: &[
            ("oid", Kind::Oid),
            ("pubname", Kind::Text),
            ("puballtables", Kind::Bool),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_publication_rel",
        columns: &[
            ("oid", Kind::Oid),
            ("prpubid", Kind::Oid),
            ("prrelid", Kind::Oid),
            ("prqual", Kind::Text),
            ("prattrs", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_publication_namespace",
        columns: &[
            ("oid", Kind::Oid),
            ("pnpubid", Kind::Oid),
            ("pnnspid", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_description",
        columns: &[
            ("objoid", Kind::Oid),
            ("classoid", Kind::Oid),
            ("objsubid", Kind::I32),
            ("description", Kind::Text),
        ],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_foreign_table",
        columns: &[("ftrelid", Kind::Oid), ("ftserver", Kind::Oid)],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_partitioned_table",
        columns: &[("partrelid", Kind::Oid), ("partstrat", Kind::Text)],
        rows: NO_ROWS,
    },
    CatalogTable {
        name: "pg_rewrite",
        columns: &[
            ("oid", Kind::Oid),
            ("rulename", Kind::Text),
            ("ev_class", Kind::Oid),
        ],
        rows: NO_ROWS,
    },
];

/// The catalog table called `name`.
/// A type's input, output, receive and send functions (`typinput`, …), as Postgres names
/// them: `int4in`, `date_in`, `array_in`, ….
fn io_functions(t: &PgType) -> impl Iterator<Item = String> {
    let (base, separator) = match t.name {
        _ if t.element != 0 => ("array", "_"),
        "date" | "timestamp" | "timestamptz" | "numeric" | "interval" => (t.name, "_"),
        name => (name, ""),
    };
    ["in", "out", "recv", "send"]
        .into_iter()
        .map(move |suffix| format!("{base}{separator}{suffix}"))
}

pub(crate) fn table(name: &str) -> Option<&'static CatalogTable> {
    TABLES.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use datafusion::arrow::array::Array;

    use super::{NULL_ARRAY_COLUMNS, TABLES};
    use crate::test_engine::engine_with_rows;

    /// `NULL_ARRAY_COLUMNS` lets a statement skip reading them: each must exist and be
    /// NULL in every row.
    #[test]
    fn the_null_array_columns_are_null_in_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine_with_rows(dir.path());
        let mut found = Vec::new();
        for table in TABLES {
            let batch = table.batch(&engine, "db").unwrap();
            for (i, field) in batch.schema().fields().iter().enumerate() {
                if NULL_ARRAY_COLUMNS.contains(&field.name().as_str()) {
                    assert_eq!(
                        batch.column(i).null_count(),
                        batch.num_rows(),
                        "{}.{}",
                        table.name,
                        field.name()
                    );
                    found.push(field.name().clone());
                }
            }
        }
        found.sort();
        let mut named: Vec<String> = NULL_ARRAY_COLUMNS.iter().map(|s| s.to_string()).collect();
        named.sort();
        assert_eq!(found, named);
    }
}
