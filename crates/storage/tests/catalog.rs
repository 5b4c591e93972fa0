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
