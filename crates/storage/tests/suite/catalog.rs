//! The catalog: tables, tags and fields created on first use, type conflicts, reserved
//! names, persistence across reopen, and a damaged file reported by name.

use strata_storage::StorageError;
use strata_storage::catalog::{Catalog, SchemaError};
use strata_storage::model::FieldType;

#[test]
fn creates_on_first_use_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let cpu = catalog.get_or_create_table("db", "cpu");
    let mem = catalog.get_or_create_table("db", "mem");
    let other = catalog.get_or_create_table("db2", "cpu");
    assert_eq!((cpu, mem, other), (0, 1, 2));
    assert_eq!(catalog.get_or_create_table("db", "cpu"), cpu);
    catalog
        .ensure_tags(cpu, ["host", "dc"].into_iter())
        .unwrap();
    assert_eq!(
        catalog.get_or_create_field(cpu, "usage", FieldType::Float),
        Ok(0)
    );
    assert_eq!(
        catalog.get_or_create_field(cpu, "up", FieldType::Boolean),
        Ok(1)
    );
    assert_eq!(
        catalog.get_or_create_field(cpu, "usage", FieldType::Float),
        Ok(0)
    );
    catalog.persist().unwrap();

    let reopened = Catalog::open(dir.path()).unwrap();
    let schema = reopened.table(cpu).unwrap();
    assert_eq!(schema.name, "cpu");
    assert_eq!(schema.tags, vec!["host".to_string(), "dc".to_string()]);
    assert_eq!(schema.fields.len(), 2);
    assert_eq!(schema.field("up").unwrap().field_type, FieldType::Boolean);
    assert_eq!(reopened.table_id("db2", "cpu"), Some(other));
    assert_eq!(
        reopened.databases(),
        vec!["db".to_string(), "db2".to_string()]
    );
    let names: Vec<String> = reopened
        .tables("db")
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, vec!["cpu".to_string(), "mem".to_string()]);
}

#[test]
fn conflicts_and_reserved_names_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let t = catalog.get_or_create_table("db", "cpu");
    catalog
        .get_or_create_field(t, "usage", FieldType::Float)
        .unwrap();
    let err = catalog
        .get_or_create_field(t, "usage", FieldType::Integer)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "field \"usage\" of table \"cpu\" is float, got integer"
    );
    catalog.ensure_tags(t, ["host"].into_iter()).unwrap();
    let err = catalog
        .get_or_create_field(t, "host", FieldType::Float)
        .unwrap_err();
    assert!(matches!(err, SchemaError::ColumnName { .. }), "{err}");
    assert_eq!(err.to_string(), "column \"host\" of table \"cpu\" is a tag");
    let err = catalog.ensure_tags(t, ["usage"].into_iter()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "column \"usage\" of table \"cpu\" is a field"
    );
    let err = catalog
        .get_or_create_field(t, "time", FieldType::Float)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "column \"time\" of table \"cpu\" is reserved for the timestamp"
    );
    let err = catalog.ensure_tags(t, ["time"].into_iter()).unwrap_err();
    assert!(err.to_string().contains("reserved"), "{err}");
}

#[test]
fn damaged_catalog_is_a_typed_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    catalog.get_or_create_table("db", "cpu");
    catalog.persist().unwrap();
    let path = dir.path().join("catalog.json");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    match Catalog::open(dir.path()) {
        Err(StorageError::Corrupt { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// `catalog.json` rewritten with `version` in its header and `body`, checksummed as the
/// checked-JSON format says (docs/format.md).
fn rewrite(path: &std::path::Path, version: u32, body: &str) {
    let header = format!(
        "STRATA catalog v{version} len={} crc32={:08x}\n",
        body.len(),
        crc32fast::hash(body.as_bytes())
    );
    std::fs::write(path, format!("{header}{body}")).expect("rewrite catalog.json");
}

#[test]
fn a_time_bigint_unit_persists_and_is_checked_against_the_file_version() {
    use strata_lineproto::Precision;
    use strata_storage::catalog::TableDefinition;
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    let definition = TableDefinition {
        tags: vec!["host".into()],
        fields: vec![("v".into(), FieldType::Float)],
        time_unit: Some(Precision::Milliseconds),
    };
    let id = catalog
        .create_table("db", "mem", &definition, false)
        .unwrap()
        .id();
    catalog.persist().unwrap();
    drop(catalog);
    let catalog = Catalog::open(dir.path()).unwrap();
    assert_eq!(
        catalog.table(id).unwrap().time_unit,
        Some(Precision::Milliseconds)
    );
    drop(catalog);

    let path = dir.path().join("catalog.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    assert!(header.starts_with("STRATA catalog v9 "), "{header}");
    assert!(body.contains("\"time_unit\": \"ms\""), "{body}");
    // A version 6 file cannot hold a unit; a unit the format does not know is damage.
    rewrite(&path, 6, body);
    match Catalog::open(dir.path()) {
        Err(StorageError::Corrupt { reason, .. }) => {
            assert!(reason.contains("time unit in a version 6 file"), "{reason}")
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    rewrite(&path, 7, &body.replace("\"ms\"", "\"days\""));
    match Catalog::open(dir.path()) {
        Err(StorageError::Corrupt { reason, .. }) => {
            assert!(reason.contains("time unit \"days\""), "{reason}")
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn super_tables_and_precisions_persist_and_are_checked_against_the_file_version() {
    use strata_lineproto::Precision;
    use strata_storage::catalog::{Subtable, SuperTable, TableDefinition, TagType};
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(dir.path()).unwrap();
    catalog
        .set_database_precision("test", Precision::Nanoseconds)
        .unwrap();
    let definition = TableDefinition {
        tags: vec!["groupid".into(), "tbname".into()],
        fields: vec![("current".into(), FieldType::Float)],
        time_unit: Some(Precision::Nanoseconds),
    };
    let super_table = SuperTable {
        time_name: "ts".into(),
        columns: vec!["current".into()],
        tags: vec![("groupid".into(), TagType::Integer)],
    };
    let id = catalog
        .create_super_table("test", "meters", &definition, super_table.clone(), false)
        .unwrap()
        .id();
    let d0 = Subtable {
        name: "d0".into(),
        super_table: id,
        tags: vec![None],
    };
    catalog
        .create_subtables("test", std::slice::from_ref(&d0))
        .unwrap();
    drop(catalog);
    let catalog = Catalog::open(dir.path()).unwrap();
    assert_eq!(catalog.subtable("test", "d0"), Some(d0));
    assert_eq!(catalog.super_table(id).as_deref(), Some(&super_table));
    assert_eq!(
        catalog.database_precision("test"),
        Some(Precision::Nanoseconds)
    );
    assert!(catalog.databases().contains(&"test".to_string()));
    drop(catalog);

    let path = dir.path().join("catalog.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    assert!(header.starts_with("STRATA catalog v9 "), "{header}");
    assert!(body.contains("\"precision\""), "{body}");
    assert!(body.contains("\"d0\": [\n"), "{body}");
    let corrupt = |version: u32, body: &str, want: &str| {
        rewrite(&path, version, body);
        match Catalog::open(dir.path()) {
            Err(StorageError::Corrupt { reason, .. }) => {
                assert!(reason.contains(want), "{reason}")
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
    };
    // A version 7 file cannot hold them; damage inside them is reported.
    corrupt(
        7,
        body,
        "version 7 file holds TDengine precisions or super tables",
    );
    corrupt(
        8,
        &body.replace("\"integer\"", "\"json\""),
        "tag groupid has type \"json\"",
    );
    corrupt(
        8,
        &body.replace("\"test\": \"ns\"", "\"test\": \"days\""),
        "has precision \"days\"",
    );
}
