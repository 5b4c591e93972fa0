//! [`StrataTable`]: one Strata table as a DataFusion [`TableProvider`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldId;
use strata_storage::{Engine, ReadRequest};

use crate::pushdown;
use crate::scan::StrataScanExec;

/// One table of the engine, with the schema it had when this provider was made (columns
/// added later are seen by the next query, which makes a new provider).
///
/// Columns: `time` (timestamp ns, not null), the tags (dictionary-encoded strings, null
/// where a series lacks the tag), then the fields (typed, null where a row lacks the field);
/// see [`strata_storage::arrow::table_schema`]. What the scan pushes into the engine is
/// described in the `pushdown` module.
#[derive(Debug)]
pub struct StrataTable {
    engine: Arc<Engine>,
    table: Arc<TableSchema>,
    schema: SchemaRef,
}

impl StrataTable {
    /// The provider for `table`, read through `engine`.
    pub fn new(engine: Arc<Engine>, table: Arc<TableSchema>) -> Self {
        let schema = strata_storage::arrow::table_schema(&table, None);
        Self {
            engine,
            table,
            schema,
        }
    }

    /// The provider for `database.table`, if it exists.
    pub fn open(engine: Arc<Engine>, database: &str, table: &str) -> Option<Self> {
        let schema = engine.table(database, table)?;
        Some(Self::new(engine, schema))
    }

    /// The table's catalog schema.
    pub fn table_schema(&self) -> &Arc<TableSchema> {
        &self.table
    }

    /// The engine read for `projection` (column indexes of [`TableProvider::schema`]) and
    /// `filters`; the time and tag columns cost nothing, so only fields are chosen.
    fn request(&self, projection: Option<&[usize]>, filters: &[Expr]) -> ReadRequest {
        let fields: Option<Vec<FieldId>> = projection.map(|columns| {
            columns
                .iter()
                .filter_map(|i| {
                    let name = self.schema.fields().get(*i)?.name();
                    self.table.field(name).map(|f| f.id)
                })
                .collect()
        });
        let filter = pushdown::apply(filters, &self.table.tags);
        ReadRequest {
            table: self.table.id,
            predicate: filter.predicate,
            start: filter.start,
            end: filter.end,
            fields,
        }
    }
}

#[async_trait]
impl TableProvider for StrataTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| pushdown::classify(f, &self.table.tags))
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(columns) => Arc::new(self.schema.project(columns)?),
            None => Arc::clone(&self.schema),
        };
        let request = self.request(projection.map(Vec::as_slice), filters);
        Ok(Arc::new(StrataScanExec::new(
            Arc::clone(&self.engine),
            Arc::clone(&self.table),
            request,
            schema,
            limit,
        )))
    }
}
